// The settings tables of docs/configuration.md and the README are generated from the settings
// slices (npm run docs:config): each file must be what the generator writes now.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { SETTINGS } from "../../src/catalog.js";
import type { Setting } from "../../src/config/settings.js";
import {
  BEGIN,
  CONFIG_DOC,
  END,
  generateConfigDoc,
  generateReadme,
  README,
  settingsTable,
} from "../../tools/docs-config.js";

/** The first cells (the setting's path) of the table rows between the markers. */
function tablePaths(doc: string): string[] {
  const part = doc.slice(doc.indexOf(BEGIN), doc.indexOf(END));
  return [...part.matchAll(/^\| `([\w.]+)`/gm)].map((m) => m[1]!);
}

describe("docs/configuration.md", () => {
  it("is what npm run docs:config writes from the slices (run it after changing a setting)", () => {
    const current = readFileSync(CONFIG_DOC, "utf8");
    expect(generateConfigDoc(current)).toBe(current);
  });

  it("lists every setting once, in --help order", () => {
    const paths = tablePaths(readFileSync(CONFIG_DOC, "utf8"));
    expect(paths).toEqual(SETTINGS.map((s) => s.path));
  });
});

describe("README.md", () => {
  it("holds the most used settings as the generator writes them", () => {
    const current = readFileSync(README, "utf8");
    expect(generateReadme(current)).toBe(current);
    expect(tablePaths(current).length).toBeGreaterThan(10);
  });
});

describe("the settings table", () => {
  const row = (s: Setting) => settingsTable([s], "docs/", "c.md").split("\n").at(-1);
  const plain: Setting = { path: "poll.pageLimit", env: "E", kind: "int", help: "h" };

  it("shows each default as --help does: one value as code, words and flavors as text", () => {
    expect(row({ ...plain, flag: "f" })).toBe("| `poll.pageLimit` | `E` | `--f` | `100` | h |");
    expect(row({ ...plain, path: "poll.maxWalkMs", shownDefault: "4 poll intervals" })).toBe(
      "| `poll.maxWalkMs` | `E` | — | 4 poll intervals | h |",
    );
    expect(row({ ...plain, path: "platform.apiPrefix", seed: "P" })).toBe(
      "| `platform.apiPrefix` (`P`) | `E` | — | /sandboxapi/v1; empty with --flavor e2b | h |",
    );
    expect(row({ ...plain, path: "platform.apiKey" })).toBe(
      "| `platform.apiKey` | `E` | — |  | h |",
    );
  });

  it("writes the doc before the help, every spelling of the flag, and links that resolve from the README", () => {
    const doc = "a | b [x](cost.md) [y](#z) [w](https://e.org)";
    expect(row({ ...plain, doc, flag: "f", flagAliases: ["g"], negatable: true })).toBe(
      "| `poll.pageLimit` | `E` | `--f`, `--g`, `--no-f` | `100` | a \\| b [x](docs/cost.md) [y](docs/c.md#z) [w](https://e.org) |",
    );
  });
});
