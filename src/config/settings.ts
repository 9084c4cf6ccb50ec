// Every setting reachable from the environment or a flag, with its dotted path in the schema: the
// rows of the features' settings slices, in --help order.
import { SLICES } from "./schema.js";
import type { Setting, SettingKind } from "./slice.js";

export type { Setting, SettingKind } from "./slice.js";

/** Environment variable naming the config file; like every variable it beats the flag. */
export const CONFIG_FILE_ENV = "SANDBOX_EXPORTER_CONFIG";

const TRUE = new Set(["1", "true", "yes", "on"]);
const FALSE = new Set(["0", "false", "no", "off"]);

/**
 * The value a string from the environment or a flag stands for. Text that is not of the setting's
 * kind is passed on unchanged, so the schema reports it with the same words as a bad file value.
 */
export function fromText(kind: SettingKind, raw: string): unknown {
  const t = raw.trim();
  switch (kind) {
    case "int":
      return /^-?\d+$/.test(t) ? Number(t) : raw;
    case "number":
      return /^[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?$/i.test(t) ? Number(t) : raw;
    case "bool": {
      const v = t.toLowerCase();
      return TRUE.has(v) ? true : FALSE.has(v) ? false : raw;
    }
    case "list":
      return t === ""
        ? []
        : t
            .split(",")
            .map((x) => x.trim())
            .filter((x) => x !== "");
    case "duration":
    case "string":
      return t;
  }
}

/** The table the loader, the flag parser and --help share. */
export const SETTINGS: readonly Setting[] = SLICES.flatMap((s) => s.settings);
