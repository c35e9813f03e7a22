/**
 * Seeded fault injection: a fraction of requests fail the way a flaky service
 * and network do (500/502/503, 429 with Retry-After, connection reset), and a
 * fraction of create requests take effect but lose their response.
 * Separate generators keep the two decisions independent of each other.
 */
import { seededRandom, seedFrom, type Random } from './random.ts';

export type Fault =
  | { kind: 'status'; status: 500 | 502 | 503 }
  | { kind: 'rate-limited' }
  | { kind: 'reset' };

const FAULTS: readonly Fault[] = [
  { kind: 'status', status: 500 },
  { kind: 'status', status: 502 },
  { kind: 'status', status: 503 },
  { kind: 'rate-limited' },
  { kind: 'reset' },
];

export class FaultInjector {
  private readonly faultRandom: Random;
  private readonly dropRandom: Random;

  constructor(seed: number, private readonly faultRate: number, private readonly dropRate: number) {
    this.faultRandom = seededRandom(seedFrom(seed, 'faults'));
    this.dropRandom = seededRandom(seedFrom(seed, 'drops'));
  }

  /** The fault for the next request, if it gets one. */
  nextFault(): Fault | undefined {
    if (this.faultRate <= 0) return undefined;
    const roll = this.faultRandom();
    const kind = this.faultRandom();
    if (roll >= this.faultRate) return undefined;
    return FAULTS[Math.min(FAULTS.length - 1, Math.floor(kind * FAULTS.length))];
  }

  /** Whether a committed create loses its response. */
  dropResponse(): boolean {
    return this.dropRate > 0 && this.dropRandom() < this.dropRate;
  }
}
