/** Issue 38: nothing from a file name or content reaches a terminal unescaped. */
import { describe, expect, it } from 'vitest';
import { printable, wellFormed } from '../../../../functions/core/text.ts';

describe('printable', () => {
  it.each([
    ['ESC sequences (clear screen, window title)', 'esc-\x1b[2J\x1b]0;pwned\x07', 'esc-\\x1b[2J\\x1b]0;pwned\\x07'],
    ['a newline that would forge a log line', 'a.tif\n12:00:00  job x SUCCEEDED', 'a.tif\\x0a12:00:00  job x SUCCEEDED'],
    ['CR, DEL and C1 (NEL, CSI)', 'a\rb\x7fc\u0085d\u009be', 'a\\x0db\\x7fc\\x85d\\x9be'],
    ['line and paragraph separators', 'a\u2028b\u2029c', 'a\\u2028b\\u2029c'],
    ['bidi overrides and isolates', 'x\u202etxt.exe\u2066', 'x\\u202etxt.exe\\u2066'],
    ['a lone surrogate', 'a\ud800b', 'a\ufffdb'],
  ])('escapes %s', (_what, text, expected) => {
    // Prepare / Act
    const shown = printable(text);
    // Assess
    expect(shown).toBe(expected);
    expect(shown).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/);
  });

  it('leaves letters of any script, emoji and backslashes alone', () => {
    expect(printable('Zürich 東京 𝓐 🙂 a\\b.tif')).toBe('Zürich 東京 𝓐 🙂 a\\b.tif');
  });
});

describe('wellFormed', () => {
  it('replaces lone surrogates with U+FFFD and keeps pairs', () => {
    expect(wellFormed('\udc00a\u{1F642}b\ud83d')).toBe('\ufffda\u{1F642}b\ufffd');
  });
});
