/**
 * User text (file names, feature names, messages quoted from files or from
 * Mapflow) on its way to a report, a message or a terminal.
 */

/** A UTF-16 surrogate without its pair. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * `text` with each lone surrogate replaced by U+FFFD, as
 * String.prototype.toWellFormed does (ES2024; the bundles target ES2023): a
 * lone surrogate has no UTF-8 form, so JSON, DynamoDB and S3 would mangle or
 * refuse the text it is in.
 */
export function wellFormed(text: string): string {
  return text.replace(LONE_SURROGATE, '\ufffd');
}

/**
 * What a terminal must not receive raw: C0 controls (ESC starts cursor moves,
 * screen clears and title changes; CR and LF forge lines), DEL, C1 controls
 * (U+009B is a one-byte CSI in some terminals) and the line and paragraph
 * separators U+2028/U+2029, plus the bidirectional overrides and isolates
 * (U+202A-U+202E, U+2066-U+2069) that reorder what follows them on screen.
 */
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/**
 * `text` safe for one line of a terminal: each character above as `\xNN` or
 * `\uNNNN` (a backslash itself stays, so a name reads as typed), lone
 * surrogates as U+FFFD. Every terminal output path of the CLI and the local
 * bridge passes names and messages through it; JSON output is already escaped.
 */
export function printable(text: string): string {
  return wellFormed(text).replace(UNPRINTABLE, (c) => {
    const code = c.charCodeAt(0);
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}
