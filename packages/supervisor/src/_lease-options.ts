// What supervise() asks of the store's lease, from its options (see acquireLease).
import type { AcquireLeaseOptions } from '@soup/hub-ckpt';
import type { SessionOptions } from './supervise-options';

/** The lease's TTL, whether to wait for an unknown holder's lease, and the lease id to take over. */
export function leaseOptionsOf(
  o: Pick<SessionOptions, 'leaseTtlMs' | 'leaseWait' | 'takeOverLease'>,
): Pick<AcquireLeaseOptions, 'ttlMs' | 'wait' | 'takeOver'> {
  return {
    // No TTL given: the store's own default (acquireLease's defaultLeaseTtlMs).
    ...(typeof o.leaseTtlMs === 'number' ? { ttlMs: o.leaseTtlMs } : {}),
    wait: o.leaseWait ?? false,
    takeOver: o.takeOverLease ?? null,
  };
}
