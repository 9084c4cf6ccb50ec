// The exporter's version, read once from package.json at start-up.
import { readFileSync } from "node:fs";

/** Version string of this build. */
export const VERSION: string = (() => {
  try {
    const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
      version?: string;
    };
    return pkg.version ?? "unknown";
  } catch {
    return "unknown";
  }
})();
