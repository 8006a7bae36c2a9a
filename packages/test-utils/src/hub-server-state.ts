// On-disk state of the local Hub-protocol test server: repos (their file trees and head
// commit), regular file contents by sha256, and LFS objects by oid with what was really stored.
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

export type HubRepoType = 'model' | 'dataset' | 'space';

/** One file of a repo tree. Regular files keep their bytes by sha256; LFS files point at an object. */
export interface HubFileRecord {
  /** Size in bytes as committed (for LFS, the size the pointer declares). */
  size: number;
  /** Git blob id (sha1) of the file as git stores it (for LFS: of the pointer text). */
  gitOid: string;
  /** sha256 of the content of a regular file. */
  sha256?: string;
  /** Present for LFS files. */
  lfs?: { oid: string; size: number };
  lastCommit: { id: string; title: string; date: string };
}

export interface HubRepoRecord {
  type: HubRepoType;
  /** `namespace/name` */
  id: string;
  private: boolean;
  head: string;
  commitCount: number;
  createdAt: string;
  files: Record<string, HubFileRecord>;
  /**
   * Every distinct blob reachable from any commit of the history (content id -> bytes), as the Hub bills
   * storage: deleting a file in a new commit frees nothing until the history is squashed.
   */
  history?: Record<string, number>;
}

/** The content id and stored size of a file (LFS oid, or the regular file's sha256). */
export function blobOf(file: HubFileRecord): [string, number] {
  return file.lfs ? [`lfs:${file.lfs.oid}`, file.lfs.size] : [`git:${file.sha256 ?? file.gitOid}`, file.size];
}

/** Bytes of every blob reachable from the repo's history. */
export function storageBytes(rec: HubRepoRecord): number {
  const all: Record<string, number> = { ...rec.history };
  for (const f of Object.values(rec.files)) {
    const [id, size] = blobOf(f);
    all[id] = size;
  }
  return Object.values(all).reduce((a, b) => a + b, 0);
}

/** What the server really holds for an LFS oid (which may differ from the oid after a faulty PUT). */
export interface LfsObjectMeta {
  sizeBytes: number;
  sha256: string;
}

export function gitBlobOid(content: Uint8Array): string {
  return createHash('sha1').update(`blob ${content.length}\0`).update(content).digest('hex');
}

export function lfsPointerText(oid: string, size: number): string {
  return `version https://git-lfs.github.com/spec/v1\noid sha256:${oid}\nsize ${size}\n`;
}

export function newCommitOid(): string {
  return createHash('sha1').update(randomBytes(32)).digest('hex');
}

/** Disk-backed store of repos and blobs, under one directory, reloadable across server restarts. */
export class HubServerState {
  readonly dir: string;
  private readonly repos = new Map<string, HubRepoRecord>();

  constructor(dir: string) {
    this.dir = dir;
    for (const sub of ['repos', 'objects', 'lfs', 'tmp']) mkdirSync(join(dir, sub), { recursive: true });
    this.load();
  }

  private load(): void {
    const root = join(this.dir, 'repos');
    for (const type of readdirSync(root)) {
      for (const ns of readdirSync(join(root, type))) {
        for (const file of readdirSync(join(root, type, ns))) {
          if (!file.endsWith('.json')) continue;
          const rec = JSON.parse(readFileSync(join(root, type, ns, file), 'utf8')) as HubRepoRecord;
          this.repos.set(key(rec.type, rec.id), rec);
        }
      }
    }
  }

  get(type: HubRepoType, id: string): HubRepoRecord | undefined {
    return this.repos.get(key(type, id));
  }

  create(type: HubRepoType, id: string, isPrivate: boolean): HubRepoRecord {
    const rec: HubRepoRecord = {
      type,
      id,
      private: isPrivate,
      head: newCommitOid(),
      commitCount: 1,
      createdAt: new Date().toISOString(),
      files: {},
    };
    this.repos.set(key(type, id), rec);
    this.save(rec);
    return rec;
  }

  delete(type: HubRepoType, id: string): boolean {
    const existed = this.repos.delete(key(type, id));
    rmSync(this.repoFile(type, id), { force: true });
    return existed;
  }

  /** Persists a repo record atomically (temp file + rename). */
  save(rec: HubRepoRecord): void {
    this.repos.set(key(rec.type, rec.id), rec);
    const file = this.repoFile(rec.type, rec.id);
    mkdirSync(dirname(file), { recursive: true });
    const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
    writeFileSync(tmp, JSON.stringify(rec));
    renameSync(tmp, file);
  }

  private repoFile(type: HubRepoType, id: string): string {
    const [ns, name] = id.split('/') as [string, string];
    return join(this.dir, 'repos', type, ns, `${name}.json`);
  }

  /** Stores the bytes of a regular file; returns its sha256. */
  putObject(content: Uint8Array): string {
    const sha = createHash('sha256').update(content).digest('hex');
    const file = this.objectPath(sha);
    if (!existsSync(file)) {
      const tmp = join(this.dir, 'tmp', `${sha}.${randomBytes(4).toString('hex')}`);
      writeFileSync(tmp, content);
      renameSync(tmp, file);
    }
    return sha;
  }

  objectPath(sha256: string): string {
    return join(this.dir, 'objects', sha256);
  }

  lfsPath(oid: string): string {
    return join(this.dir, 'lfs', oid);
  }

  tmpPath(): string {
    return join(this.dir, 'tmp', `put-${randomBytes(8).toString('hex')}`);
  }

  /** Where part `n` of a multipart upload of `oid` waits for the completion. */
  partPath(oid: string, n: number): string {
    return join(this.dir, 'tmp', `part-${oid}-${n}`);
  }

  lfsMeta(oid: string): LfsObjectMeta | undefined {
    const metaFile = `${this.lfsPath(oid)}.json`;
    if (!existsSync(metaFile) || !existsSync(this.lfsPath(oid))) return undefined;
    return JSON.parse(readFileSync(metaFile, 'utf8')) as LfsObjectMeta;
  }

  /** Moves a received temp file into place as the object for `oid`, recording what it really holds. */
  commitLfsObject(oid: string, tmp: string, meta: LfsObjectMeta): void {
    renameSync(tmp, this.lfsPath(oid));
    writeFileSync(`${this.lfsPath(oid)}.json`, JSON.stringify(meta));
  }

  /** Path of the bytes a resolve of this file serves, and their size. */
  contentOf(file: HubFileRecord): { path: string; sizeBytes: number } {
    if (file.lfs) {
      const path = this.lfsPath(file.lfs.oid);
      return { path, sizeBytes: existsSync(path) ? statSync(path).size : 0 };
    }
    return { path: this.objectPath(file.sha256 ?? ''), sizeBytes: file.size };
  }
}

function key(type: HubRepoType, id: string): string {
  return `${type}:${id}`;
}
