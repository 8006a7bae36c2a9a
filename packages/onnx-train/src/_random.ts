// Deterministic pseudo-random numbers: xoshiro128** streams seeded through a 32-bit mixer,
// plus a counter-based uniform for the sampler (position k of a stream needs no state).

/** murmur3's 32-bit finaliser: a bijective avalanche mix. */
export function mix32(x: number): number {
  let h = x >>> 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** FNV-1a over UTF-16 code units, then mixed. */
export function hashString(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return mix32(h);
}

/** Combines 32-bit words into one well-mixed 32-bit word. */
export function combine(...words: number[]): number {
  let h = 0x9e3779b9;
  for (const w of words) h = mix32((h ^ mix32(w >>> 0)) + 0x7f4a7c15 + (h << 6) + (h >>> 2));
  return h >>> 0;
}

/** Splits a JS number seed (any safe integer) into two 32-bit words. */
export function seedWords(seed: number): [number, number] {
  const lo = seed >>> 0;
  const hi = Math.floor(seed / 0x100000000) >>> 0;
  return [lo, hi];
}

export class Xoshiro128 {
  private s0: number;
  private s1: number;
  private s2: number;
  private s3: number;
  private spare: number | undefined;

  constructor(seed: number) {
    this.s0 = mix32(seed + 0x9e3779b9);
    this.s1 = mix32(this.s0 + 0x632be5ab);
    this.s2 = mix32(this.s1 + 0x85ebca6b);
    this.s3 = mix32(this.s2 + 0xc2b2ae35);
    if ((this.s0 | this.s1 | this.s2 | this.s3) === 0) this.s0 = 1;
  }

  nextU32(): number {
    const result = Math.imul(rotl(Math.imul(this.s1, 5), 7), 9) >>> 0;
    const t = this.s1 << 9;
    this.s2 ^= this.s0;
    this.s3 ^= this.s1;
    this.s1 ^= this.s2;
    this.s0 ^= this.s3;
    this.s2 ^= t;
    this.s3 = rotl(this.s3, 11);
    return result;
  }

  /** Uniform in [0, 1) with 53 random bits. */
  nextFloat(): number {
    return ((this.nextU32() >>> 5) * 67108864 + (this.nextU32() >>> 6)) / 9007199254740992;
  }

  /** Standard normal (Box–Muller, both values used). */
  nextNormal(): number {
    if (this.spare !== undefined) {
      const s = this.spare;
      this.spare = undefined;
      return s;
    }
    let u = 0;
    while (u === 0) u = this.nextFloat();
    const v = this.nextFloat();
    const r = Math.sqrt(-2 * Math.log(u));
    this.spare = r * Math.sin(2 * Math.PI * v);
    return r * Math.cos(2 * Math.PI * v);
  }
}

function rotl(x: number, k: number): number {
  return ((x << k) | (x >>> (32 - k))) >>> 0;
}

/**
 * Uniform in [0, 1) for draw number `counter` of stream `stream` under `seed`: stateless, so resumable from a cursor.
 */
export function counterUniform(seed: number, stream: number, counter: number): number {
  const [lo, hi] = seedWords(seed);
  const [clo, chi] = seedWords(counter);
  const a = combine(lo, hi, stream, clo, chi, 1);
  const b = combine(lo, hi, stream, clo, chi, 2);
  return ((a >>> 5) * 67108864 + (b >>> 6)) / 9007199254740992;
}
