// The configuration as loaded from one YAML file `c.yaml` (no flags, no environment).
import { expect } from "vitest";
import { loadConfig } from "../../src/catalog.js";
import { ConfigError } from "../../src/config/load.js";
import type { Config } from "../../src/config/settings.js";

/** The configuration `yaml` gives when it is the whole config file. */
export function loadYaml(yaml: string): Config {
  return loadConfig({
    argv: ["--config", "c.yaml"],
    env: {},
    readFile: (path) => {
      if (path !== "c.yaml") throw new Error(`ENOENT: ${path}`);
      return yaml;
    },
  }).config;
}

/** The lines of the ConfigError `yaml` must give (fails the test when it loads). */
export function yamlProblems(yaml: string): string[] {
  try {
    loadYaml(yaml);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).format().split("\n");
  }
  throw new Error("expected a ConfigError");
}
