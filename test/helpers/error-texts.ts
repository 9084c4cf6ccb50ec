// Every text an error could show, for tests that check a secret appears in none of them.

/** Every string an error carries: String(err), message, stack, JSON and own properties, causes. */
export function errorTexts(err: unknown, depth = 0): string[] {
  if (typeof err !== "object" || err === null || depth > 3) return [String(err)];
  const out = [String(err), JSON.stringify(err)];
  for (const k of Object.getOwnPropertyNames(err)) {
    const v = (err as Record<string, unknown>)[k];
    if (typeof v === "string") out.push(v);
    else if (typeof v === "object" && v !== null) out.push(...errorTexts(v, depth + 1));
  }
  return out;
}
