/**
 * Reads the features of a GeoJSON FeatureCollection as its text streams by,
 * one feature at a time, without holding the document: results can be far
 * larger than a Lambda's memory. Only the features array of the top-level
 * object is read; each feature's text is kept only until it is parsed, and a
 * feature larger than `maxFeatureChars` is counted but not parsed.
 */

export interface FeatureScannerOptions {
  /** Called with every feature that could be parsed (an object), in order. */
  onFeature(feature: Record<string, unknown>): void;
  /** A feature longer than this (characters) is counted, not parsed. Default 4 MiB. */
  maxFeatureChars?: number;
}

export class FeatureScanner {
  /** Features seen (parsed or not). */
  count = 0;
  /** Features too large or not valid JSON. */
  skipped = 0;
  private depth = 0;
  private inString = false;
  private escape = false;
  private key = '';
  private collectingKey = false;
  private lastKey = '';
  private inFeatures = false;
  private capturing = false;
  private captureOverflow = false;
  private buffer: string[] = [];
  private bufferChars = 0;
  private readonly maxFeatureChars: number;

  constructor(private readonly options: FeatureScannerOptions) {
    this.maxFeatureChars = options.maxFeatureChars ?? 4 * 1024 * 1024;
  }

  push(text: string): void {
    let start = this.capturing ? 0 : -1;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (this.inString) {
        if (this.escape) this.escape = false;
        else if (c === 0x5c /* \ */) this.escape = true;
        else if (c === 0x22 /* " */) {
          this.inString = false;
          if (this.collectingKey) {
            this.lastKey = this.key;
            this.collectingKey = false;
          }
        } else if (this.collectingKey && this.key.length < 16) this.key += text[i];
        continue;
      }
      switch (c) {
        case 0x22: // "
          this.inString = true;
          // Keys of the top-level object only; short ones are enough to find "features".
          this.collectingKey = this.depth === 1 && !this.inFeatures;
          this.key = '';
          break;
        case 0x7b: // {
        case 0x5b: // [
          if (c === 0x5b && this.depth === 1 && this.lastKey === 'features') this.inFeatures = true;
          this.depth++;
          if (this.inFeatures && this.depth === 3 && c === 0x7b) {
            this.capturing = true;
            this.captureOverflow = false;
            this.buffer = [];
            this.bufferChars = 0;
            start = i;
          }
          break;
        case 0x7d: // }
        case 0x5d: // ]
          this.depth--;
          if (this.capturing && this.depth === 2) {
            this.append(text, start, i + 1);
            this.capturing = false;
            start = -1;
            this.emit();
          } else if (this.inFeatures && this.depth === 1) {
            this.inFeatures = false;
            this.lastKey = '';
          }
          break;
        case 0x2c: // ,
          if (this.depth === 1) this.lastKey = '';
          break;
        default:
      }
    }
    if (this.capturing && start >= 0) this.append(text, start, text.length);
  }

  private append(text: string, from: number, to: number): void {
    if (this.captureOverflow) return;
    this.bufferChars += to - from;
    if (this.bufferChars > this.maxFeatureChars) {
      this.captureOverflow = true;
      this.buffer = [];
      return;
    }
    this.buffer.push(text.slice(from, to));
  }

  private emit(): void {
    this.count++;
    if (this.captureOverflow) {
      this.skipped++;
      return;
    }
    const text = this.buffer.join('');
    this.buffer = [];
    try {
      const feature = JSON.parse(text) as unknown;
      if (feature && typeof feature === 'object' && !Array.isArray(feature)) this.options.onFeature(feature as Record<string, unknown>);
      else this.skipped++;
    } catch {
      this.skipped++;
    }
  }
}
