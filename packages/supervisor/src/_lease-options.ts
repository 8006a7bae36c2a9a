// What supervise() asks of the store's lease, from its options (see acquireLease).
import { type AcquireLeaseOptions, DEFAULT_LEASE_TTL_MS } from '@soup/hub-ckpt';
import type { SuperviseOptions } from './supervise-options';

/** The lease's TTL, whether to wait for an unknown holder's lease, and the lease id to take over. */
export function leaseOptionsOf(
  o: Pick<SuperviseOptions, 'leaseTtlMs' | 'leaseWait' | 'takeOverLease'>,
): Pick<AcquireLeaseOptions, 'ttlMs' | 'wait' | 'takeOver'> {
  return {
    ttlMs: o.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS,
    wait: o.leaseWait ?? false,
    takeOver: o.takeOverLease ?? null,
  };
}
