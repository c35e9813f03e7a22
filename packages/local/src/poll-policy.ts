/** How often a local bridge polls its Mapflow (the embedded simulator, or one given by URL). */
import { DEFAULT_POLL_POLICY, type PollPolicy } from 'mapflow-bridge/functions/polling/poll-policy.ts';

/** Poll quickly locally: the simulator finishes in seconds, not minutes. */
// nearEndSeconds 1: locally a processing takes seconds and a poll is a loopback request, so the
// estimator's poll comes 1 s after the earliest possible end (the default, min(12, maxSeconds) = 3 s,
// left every slot busy 1.35 s past the processing's end, median, in packages/bench/admission.ts).
export const LOCAL_POLL_POLICY: PollPolicy = { initialSeconds: 1, maxSeconds: 3, factor: 1.5, maxJobSeconds: 3_600, nearEndSeconds: 1 };

/**
 * The poll policy of a local bridge: LOCAL_POLL_POLICY against the embedded
 * simulator; against a Mapflow given by URL (the live service, where a
 * processing takes minutes to hours) the production default, so the live API
 * is not asked every second or two. `pollPolicy` overrides either, key by key.
 */
export function localPollPolicy(options: { mapflow?: unknown; pollPolicy?: Partial<PollPolicy> | undefined }): PollPolicy {
  return { ...(options.mapflow ? DEFAULT_POLL_POLICY : LOCAL_POLL_POLICY), ...options.pollPolicy };
}
