// The configuration's type and the reading of one setting's text. `Settings` starts empty: each
// settings slice file adds its section by module augmentation (as each collector adds its data
// to TickData), so config/ names no feature; the catalog (src/catalog.ts) composes the schema from
// the same slices and checks that what it parses is a `Config`.
import type { z } from "zod";
import type { Setting, SettingKind } from "./slice.js";

export type { Setting, SettingKind } from "./slice.js";

/** The configuration's sections by key; each slice file adds its own (declare module). */
// biome-ignore lint/suspicious/noEmptyInterface: filled in by module augmentation.
export interface Settings {}

/** The validated configuration every other module receives (defaults filled in). */
export type Config = Settings;

/**
 * What the loader, the flag parser and --help read of the composed configuration: the schema
 * (parsing `{}` gives every default), every setting's row in --help order and the flavors whose
 * presets change defaults. The catalog builds the one there is.
 */
export interface SettingsCatalog {
  readonly schema: z.ZodType<Config>;
  readonly settings: readonly Setting[];
  readonly flavors: readonly string[];
}

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
