// Minimal multipart/form-data reader for file uploads (RFC 7578), enough for one or a few parts.

/** One part of a form. */
export interface FormPart {
  name: string;
  filename?: string;
  data: Buffer;
}

/** The boundary of a multipart content type, or undefined. */
export function multipartBoundary(contentType: string): string | undefined {
  const m = /boundary=(?:"([^"]+)"|([^;]+))/i.exec(contentType);
  return m?.[1] ?? m?.[2]?.trim();
}

/** Splits a multipart body into parts; malformed parts are skipped. */
export function parseMultipart(body: Buffer, boundary: string): FormPart[] {
  const delimiter = Buffer.from(`--${boundary}`);
  const parts: FormPart[] = [];
  let pos = body.indexOf(delimiter);
  while (pos >= 0) {
    const start = pos + delimiter.length;
    if (body.subarray(start, start + 2).toString() === "--") break;
    const next = body.indexOf(delimiter, start);
    if (next < 0) break;
    // Each part sits between "\r\n" after the delimiter and "\r\n" before the next one.
    const part = body.subarray(start + 2, next - 2);
    const headerEnd = part.indexOf("\r\n\r\n");
    if (headerEnd >= 0) {
      const headers = part.subarray(0, headerEnd).toString("utf8");
      const disposition = /content-disposition:([^\r\n]*)/i.exec(headers)?.[1] ?? "";
      const name = /\bname="([^"]*)"/i.exec(disposition)?.[1];
      const filename = /\bfilename="([^"]*)"/i.exec(disposition)?.[1];
      if (name !== undefined) {
        const data = Buffer.from(part.subarray(headerEnd + 4));
        parts.push(filename === undefined ? { name, data } : { name, filename, data });
      }
    }
    pos = next;
  }
  return parts;
}
