// Builds one Buffer from new text and byte ranges of earlier Buffers, merging adjacent ranges into
// one copy, so re-rendering mostly unchanged output costs a few memcpys instead of string building.

/** Text is batched into writes of about this many characters. */
const TEXT_BATCH = 64 * 1024;
/**
 * Adjacent copied ranges are merged up to about this many bytes: an unchanged fleet would
 * otherwise be one copy of a whole section at finish, tens of ms the event loop cannot break.
 */
const COPY_BATCH = 256 * 1024;

/** An append-only Buffer under construction. */
export class SectionWriter {
  private buf: Buffer;
  private len = 0;
  private text = "";
  private textBytes = 0;
  /** True while every batched string is ASCII (bytes === length), which latin1 writes as is. */
  private textAscii = true;
  private src: Buffer | undefined;
  private srcStart = 0;
  private srcEnd = 0;

  constructor(capacity: number) {
    this.buf = Buffer.allocUnsafeSlow(Math.max(capacity, 1024));
  }

  /** Byte offset the next appended byte will have. */
  get position(): number {
    return this.len + this.textBytes + (this.srcEnd - this.srcStart);
  }

  /** Appends text whose UTF-8 length the caller already knows. */
  write(s: string, bytes: number): void {
    if (this.src) this.flushCopy();
    this.text += s;
    this.textBytes += bytes;
    if (bytes !== s.length) this.textAscii = false;
    if (this.text.length >= TEXT_BATCH) this.flushText();
  }

  /** Appends bytes [start, end) of `src`; continues the pending copy when they follow it. */
  copy(src: Buffer, start: number, end: number): void {
    if (end <= start) return;
    if (this.src === src && this.srcEnd === start && this.srcEnd - this.srcStart < COPY_BATCH) {
      this.srcEnd = end;
      return;
    }
    if (this.textBytes) this.flushText();
    if (this.src) this.flushCopy();
    this.src = src;
    this.srcStart = start;
    this.srcEnd = end;
  }

  /** The finished Buffer, trimmed to size when the spare capacity is worth giving back. */
  finish(): Buffer {
    if (this.textBytes) this.flushText();
    if (this.src) this.flushCopy();
    if (this.buf.length - this.len > this.buf.length / 4) {
      const exact = Buffer.allocUnsafeSlow(this.len);
      this.buf.copy(exact, 0, 0, this.len);
      return exact;
    }
    return this.buf.subarray(0, this.len);
  }

  private ensure(extra: number): void {
    if (this.len + extra <= this.buf.length) return;
    const bigger = Buffer.allocUnsafeSlow(Math.max(this.buf.length * 2, this.len + extra));
    this.buf.copy(bigger, 0, 0, this.len);
    this.buf = bigger;
  }

  private flushText(): void {
    this.ensure(this.textBytes);
    this.len += this.buf.write(
      this.text,
      this.len,
      this.textBytes,
      this.textAscii ? "latin1" : "utf8",
    );
    this.text = "";
    this.textBytes = 0;
    this.textAscii = true;
  }

  private flushCopy(): void {
    const src = this.src as Buffer;
    this.ensure(this.srcEnd - this.srcStart);
    this.len += src.copy(this.buf, this.len, this.srcStart, this.srcEnd);
    // The pending range is part of `len` now; leaving it set would count it twice in `position`.
    this.src = undefined;
    this.srcStart = 0;
    this.srcEnd = 0;
  }
}
