// A tiny all-gather over TCP for the Node trainer's data parallel mode (torchrun's environment: WORLD_SIZE, RANK,
// MASTER_ADDR, MASTER_PORT). Rank 0 serves at MASTER_ADDR:MASTER_PORT, the others connect (retrying while rank 0
// starts). Each step every rank sends rank 0 its micro-batches' losses and float32 gradients and its stop flag;
// rank 0 answers every rank with all of them in rank order and the OR of the flags. Each rank then sums the same
// numbers in the same order: no floating-point sum happens here, so the result cannot depend on the network.
import { createConnection, createServer } from 'node:net';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** {stop, parts: [{loss, grads: Float32Array[]}]} → one buffer: u32 header length, JSON header, raw floats. */
function encode(stop, parts) {
  const sizes = parts.map((p) => p.grads.map((g) => g.length));
  const head = Buffer.from(JSON.stringify({ stop, losses: parts.map((p) => p.loss), sizes }));
  const blobs = parts.flatMap((p) => p.grads.map((g) => Buffer.from(g.buffer, g.byteOffset, g.byteLength)));
  const len = Buffer.alloc(4);
  len.writeUInt32LE(head.length);
  return Buffer.concat([len, head, ...blobs]);
}

/** The inverse of encode; every array is a fresh copy (the training step scales and frees them). */
function decode(buf) {
  const n = buf.readUInt32LE(0);
  const { stop, losses, sizes } = JSON.parse(buf.subarray(4, 4 + n).toString());
  let at = 4 + n;
  const parts = losses.map((loss, i) => ({
    loss,
    grads: sizes[i].map((size) => {
      const g = new Float32Array(size);
      Buffer.from(g.buffer).set(buf.subarray(at, at + size * 4));
      at += size * 4;
      return g;
    }),
  }));
  return { stop, parts };
}

/** Length-prefixed frames on a socket: `next()` resolves with the next whole frame, rejects once the peer is gone. */
function framed(socket, who) {
  let pending = Buffer.alloc(0);
  const frames = [];
  const waiters = [];
  let gone;
  const flush = () => {
    while (waiters.length && (frames.length || gone)) {
      const w = waiters.shift();
      if (frames.length) w.resolve(frames.shift());
      else w.reject(gone);
    }
  };
  socket.on('data', (chunk) => {
    pending = Buffer.concat([pending, chunk]);
    while (pending.length >= 8) {
      const size = Number(pending.readBigUInt64LE(0));
      if (pending.length < 8 + size) break;
      frames.push(pending.subarray(8, 8 + size));
      pending = pending.subarray(8 + size);
    }
    flush();
  });
  const lost = () => {
    gone ??= new Error(`data parallel: lost the connection to ${who}`);
    flush();
  };
  socket.on('close', lost);
  socket.on('error', lost);
  return {
    next: () => new Promise((resolve, reject) => (waiters.push({ resolve, reject }), flush())),
    send: (buf) => {
      const len = Buffer.alloc(8);
      len.writeBigUInt64LE(BigInt(buf.length));
      socket.write(Buffer.concat([len, buf]));
    },
    close: () => socket.destroy(),
  };
}

/** Rank 0: accepts the other ranks (each says its rank first). */
async function serve(addr, port, worldSize, timeoutMs) {
  const peers = new Map();
  const server = createServer();
  const all = new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      const missing = Array.from({ length: worldSize - 1 }, (_, i) => i + 1).filter((r) => !peers.has(r));
      reject(new Error(`data parallel: rank(s) ${missing.join(', ')} did not connect within ${timeoutMs} ms`));
    }, timeoutMs);
    server.on('connection', async (socket) => {
      socket.setNoDelay(true);
      const peer = framed(socket, 'a rank');
      const rank = Number((await peer.next()).toString());
      peers.set(rank, peer);
      if (peers.size === worldSize - 1) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  await new Promise((resolve, reject) => server.once('error', reject).listen(port, addr, resolve));
  await all;
  server.close();
  return peers;
}

/** Ranks 1…: connects to rank 0, retrying while it is not listening yet. */
async function connect(addr, port, rank, timeoutMs) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const socket = createConnection({ host: addr, port });
    const ok = await new Promise((resolve) => {
      socket.once('connect', () => resolve(true));
      socket.once('error', () => resolve(false));
    });
    if (ok) {
      socket.setNoDelay(true);
      const peer = framed(socket, 'rank 0');
      peer.send(Buffer.from(String(rank)));
      return peer;
    }
    socket.destroy();
    if (Date.now() > until) throw new Error(`data parallel: rank 0 not listening at ${addr}:${port}`);
    await sleep(100);
  }
}

/**
 * Joins the group; returns `exchange(stop, mine) → {stop, all}`: every rank's micro-batch results in rank order and
 * whether any rank asked to stop.
 */
export async function joinGroup({ rank, worldSize, addr, port, timeoutMs = 60_000 }) {
  if (rank === 0) {
    const peers = await serve(addr, port, worldSize, timeoutMs);
    return {
      async exchange(stop, mine) {
        const got = [{ stop, parts: mine }];
        for (let r = 1; r < worldSize; r++) got.push(decode(await peers.get(r).next()));
        const frame = encode(
          got.some((g) => g.stop),
          got.flatMap((g) => g.parts),
        );
        for (const peer of peers.values()) peer.send(frame);
        return decode(frame);
      },
      close: () => {
        for (const peer of peers.values()) peer.close();
      },
    };
  }
  const root = await connect(addr, port, rank, timeoutMs);
  return {
    async exchange(stop, mine) {
      root.send(encode(stop, mine));
      return decode(await root.next());
    },
    close: () => root.close(),
  };
}
