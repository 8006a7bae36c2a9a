// One candidate's search over its micro-batches in soup train's tuner (tune-train): from half its
// largest fitting m up while each is faster per sample, and, when the first step up was not, down
// from there while faster. The same micro-batches as from the largest down, but the largest, its
// dearest point, is timed after a cheaper one, so that it too can stop early. A walk only says
// which m comes next; the tuner times it (alone, or side by side with another walk's same m).

export class MicroWalk {
  private i: number;
  private dir: 'start' | 'up' | 'down' | 'done' = 'start';
  private prev = 0;
  private climbed = false;

  /** `allowed`: the micro-batches it may take, ascending; it starts at `allowed[startAt]`. */
  constructor(
    readonly allowed: readonly number[],
    readonly startAt: number,
  ) {
    if (allowed.length === 0) throw new Error('MicroWalk: no micro-batch to time');
    this.i = startAt;
  }

  /**
   * Half the largest (the largest divisor at or under it), above nothing excluded: where a walk over `allowed` starts.
   */
  static over(allowed: readonly number[]): MicroWalk {
    const top = allowed[allowed.length - 1]!;
    return new MicroWalk(allowed, Math.max(0, allowed.filter((d) => d <= top / 2).length - 1));
  }

  /**
   * The two micro-batches the walk takes first whatever their timings say (the start, then the
   * first step up), while nothing is taken yet; empty when there is no step up.
   */
  opening(): number[] {
    return this.dir === 'start' && this.startAt + 1 < this.allowed.length
      ? [this.allowed[this.startAt]!, this.allowed[this.startAt + 1]!]
      : [];
  }

  /** The micro-batch to time next, or null when the walk is over. */
  next(): number | null {
    if (this.dir === 'up' && this.i >= this.allowed.length) this.turn();
    if (this.dir === 'down' && this.i < 0) this.dir = 'done';
    return this.dir === 'done' ? null : this.allowed[this.i]!;
  }

  /** What the timing of next() gave: its samples per second at G. */
  took(samplesPerSecond: number): void {
    if (this.dir === 'done') throw new Error('MicroWalk: took() after the walk is over');
    if (this.dir === 'start') {
      this.prev = samplesPerSecond;
      this.dir = 'up';
      this.i = this.startAt + 1;
    } else if (samplesPerSecond <= this.prev) {
      // Slower: those beyond it are not tried. Down from the start when no step up was faster.
      if (this.dir === 'up') this.turn();
      else this.dir = 'done';
    } else {
      this.prev = samplesPerSecond;
      if (this.dir === 'up') {
        this.climbed = true;
        this.i += 1;
      } else this.i -= 1;
    }
  }

  private turn(): void {
    if (this.climbed) {
      this.dir = 'done';
      return;
    }
    this.dir = 'down';
    this.i = this.startAt - 1; // from the start, whose samples/s `prev` still holds (no step up was faster)
  }
}
