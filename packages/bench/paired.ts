/**
 * Paired runs on a noisy machine: each bridge run against the baseline run
 * beside it. The ratio's spread from pair to pair (the receiver and the
 * local S3 share two cores with the client) is far wider than the 10 % the
 * upload goal allows, so one median says little. This gives the geometric
 * mean of the pair ratios with its 95 % confidence interval (Student's t on
 * the log ratios) and judges a goal "ratio <= limit" only when the whole
 * interval is on one side of it.
 */

/** Two-sided 95 % quantiles of Student's t for 1-30 degrees of freedom; 1.96 beyond. */
const T95 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.16, 2.145, 2.131, 2.12, 2.11, 2.101, 2.093, 2.086, 2.08, 2.074, 2.069, 2.064, 2.06, 2.056, 2.052, 2.048, 2.045, 2.042];

export interface PairedRatio {
  pairs: number;
  /** Geometric mean of the pair ratios. */
  ratio: number;
  /** 95 % confidence interval of that mean (NaN with fewer than two pairs). */
  low: number;
  high: number;
  /** Against `limit`: met (the interval is under it), missed (over it), or undecided (it straddles it). */
  verdict: 'met' | 'missed' | 'undecided';
}

export function pairedRatio(ratios: readonly number[], limit: number): PairedRatio {
  const logs = ratios.filter((r) => Number.isFinite(r) && r > 0).map(Math.log);
  const n = logs.length;
  const mean = logs.reduce((a, b) => a + b, 0) / Math.max(1, n);
  if (n < 2) return { pairs: n, ratio: Math.exp(mean), low: Number.NaN, high: Number.NaN, verdict: 'undecided' };
  const variance = logs.reduce((sum, x) => sum + (x - mean) ** 2, 0) / (n - 1);
  const half = (T95[n - 2] ?? 1.96) * Math.sqrt(variance / n);
  const low = Math.exp(mean - half);
  const high = Math.exp(mean + half);
  return { pairs: n, ratio: Math.exp(mean), low, high, verdict: high <= limit ? 'met' : low > limit ? 'missed' : 'undecided' };
}
