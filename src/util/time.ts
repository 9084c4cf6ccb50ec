// The one ISO-8601 time parser and the one epoch-number reader: the normalizer and the policy share them.

/**
 * Epoch milliseconds of an epoch number, its unit told by magnitude: below 1e11 seconds, below
 * 1e14 milliseconds, below 1e17 microseconds, else nanoseconds. Zero or less (or not finite)
 * means "not set" and gives undefined.
 */
export function epochMs(n: number): number | undefined {
  if (!(n > 0) || !Number.isFinite(n)) return undefined;
  if (n < 1e11) return Math.round(n * 1000);
  if (n < 1e14) return Math.round(n);
  if (n < 1e17) return Math.round(n / 1e3);
  return Math.round(n / 1e6);
}

/**
 * `YYYY-MM-DD[(T| )HH:MM[:SS[.frac]][Z|±HH[:]MM]]` -> epoch ms, or undefined for anything else.
 * A time without a zone is UTC (Date.parse would read it as local time); a date alone is its
 * midnight UTC. Hand-rolled because the normalizer runs it twice per sandbox.
 */
export function parseIsoTime(s: string): number | undefined {
  const len = s.length;
  if (len < 10 || s.charCodeAt(4) !== 45 || s.charCodeAt(7) !== 45) return undefined;
  const year = digits(s, 0, 4);
  const month = digits(s, 5, 2);
  const day = digits(s, 8, 2);
  if (year < 0 || month < 1 || month > 12 || day < 1 || day > 31) return undefined;
  const date = daysFromCivil(year, month, day) * 86_400_000;
  if (len === 10) return date;
  if (len < 16) return undefined;
  const sep = s.charCodeAt(10);
  if ((sep !== 84 && sep !== 116 && sep !== 32) || s.charCodeAt(13) !== 58) return undefined;
  const hour = digits(s, 11, 2);
  const minute = digits(s, 14, 2);
  if (hour < 0 || hour > 24 || minute < 0 || minute > 59) return undefined;
  let i = 16;
  let second = 0;
  let ms = 0;
  if (s.charCodeAt(i) === 58) {
    second = digits(s, 17, 2);
    if (second < 0 || second > 60) return undefined;
    i = 19;
    const dot = s.charCodeAt(i);
    if (dot === 46 || dot === 44) {
      let scale = 100;
      for (i++; i < len; i++) {
        const c = s.charCodeAt(i) - 48;
        if (c < 0 || c > 9) break;
        ms += c * scale;
        scale /= 10;
      }
      ms = Math.floor(ms);
    }
  }
  let offsetMin = 0;
  if (i < len) {
    const z = s.charCodeAt(i);
    if ((z === 90 || z === 122) && i + 1 === len) offsetMin = 0;
    else if (z === 43 || z === 45) {
      const oh = digits(s, i + 1, 2);
      const colon = s.charCodeAt(i + 3) === 58 ? 1 : 0;
      const om = digits(s, i + 3 + colon, 2);
      if (oh < 0 || om < 0 || i + 5 + colon !== len) return undefined;
      offsetMin = (z === 43 ? 1 : -1) * (oh * 60 + om);
    } else return undefined;
  }
  const seconds = hour * 3600 + minute * 60 + second - offsetMin * 60;
  return date + seconds * 1000 + ms;
}

/** True when a string starts like an ISO 8601 date-time (cheap pre-check for parseIsoTime). */
export function looksLikeIsoTime(s: string): boolean {
  return s.length >= 16 && s.length <= 40 && s.charCodeAt(4) === 45 && s.charCodeAt(13) === 58;
}

function digits(s: string, at: number, count: number): number {
  let n = 0;
  for (let i = at; i < at + count; i++) {
    const c = s.charCodeAt(i) - 48;
    // Past the end charCodeAt gives NaN, which no comparison catches: a short text is no number.
    if (!(c >= 0 && c <= 9)) return -1;
    n = n * 10 + c;
  }
  return n;
}

/** Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm; Date.UTC costs 2x). */
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (month > 2 ? month - 3 : month + 9) + 2) / 5) + day - 1;
  return era * 146_097 + yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy - 719_468;
}
