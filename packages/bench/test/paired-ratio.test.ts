import { describe, expect, it } from 'vitest';
import { pairedRatio } from '../paired.ts';

describe('pairedRatio', () => {
  it('gives the geometric mean of the pair ratios with a 95 % interval from Student\'s t', () => {
    // Prepare: log ratios -0.1, 0, 0.1 (mean 0, sample sd 0.1)
    const ratios = [Math.exp(-0.1), 1, Math.exp(0.1)];
    // Act
    const result = pairedRatio(ratios, 1.1);
    // Assess: half width t(2) x 0.1 / sqrt(3) = 4.303 x 0.0577
    expect(result.ratio).toBeCloseTo(1, 10);
    expect(Math.log(result.high)).toBeCloseTo((4.303 * 0.1) / Math.sqrt(3), 6);
    expect(Math.log(result.low)).toBeCloseTo((-4.303 * 0.1) / Math.sqrt(3), 6);
    expect(result).toMatchObject({ pairs: 3, verdict: 'undecided' });
  });

  it('judges met or missed only when the whole interval is on one side of the limit', () => {
    // Act / Assess
    expect(pairedRatio([1.0, 1.02, 0.98, 1.01, 0.99], 1.1).verdict).toBe('met');
    expect(pairedRatio([1.3, 1.32, 1.28, 1.31, 1.29], 1.1).verdict).toBe('missed');
    expect(pairedRatio([0.76, 1.33, 1.06, 0.9, 1.2], 1.1).verdict).toBe('undecided');
    expect(pairedRatio([1.05], 1.1)).toMatchObject({ pairs: 1, verdict: 'undecided' });
  });
});
