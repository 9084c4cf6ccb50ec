import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/catalog.js";
import { ConfigError, type LoadedConfig } from "../../src/config/load.js";

/** A readFile over an in-memory map; a missing name throws as fs would. */
function files(map: Record<string, string>): (path: string) => string {
  return (path) => {
    const text = map[path];
    if (text === undefined) throw new Error(`ENOENT: no such file or directory, open '${path}'`);
    return text;
  };
}

function load(
  argv: string[],
  env: Record<string, string> = {},
  fileMap: Record<string, string> = {},
): LoadedConfig {
  return loadConfig({ argv, env, readFile: files(fileMap) });
}

/** The ConfigError loadConfig throws for these inputs. */
function problemsOf(
  argv: string[],
  env: Record<string, string> = {},
  fileMap: Record<string, string> = {},
  requireApi = false,
): ConfigError {
  try {
    loadConfig({ argv, env, readFile: files(fileMap), requireApi });
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error("expected a ConfigError");
}

/** A bcrypt hash, as server.basicAuthUsers takes (exporter-toolkit's stand-in for "fakepassword"). */
const BCRYPT = "$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi";

// [seed name in a file, platform key, env var, flag, file value, flag value, env value, parsed {file, flag, env}, default]
const SEED_FIELDS = [
  {
    seed: "ApiURL",
    key: "apiUrl",
    env: "SANDBOX_API_URL",
    flag: "--api-url",
    values: ["http://file.test", "http://flag.test", "http://env.test"],
    parsed: ["http://file.test", "http://flag.test", "http://env.test"],
    def: "",
  },
  {
    seed: "ApiKey",
    key: "apiKey",
    env: "SANDBOX_API_KEY",
    flag: undefined,
    values: ["file-key", undefined, "env-key"],
    parsed: ["file-key", undefined, "env-key"],
    def: "",
  },
  {
    seed: "SandboxDomain",
    key: "sandboxDomain",
    env: "SANDBOX_DOMAIN",
    flag: "--sandbox-domain",
    values: ["file.example", "flag.example", "env.example"],
    parsed: ["file.example", "flag.example", "env.example"],
    def: "e2b.app",
  },
  {
    seed: "Timeout",
    key: "timeoutMs",
    env: "SANDBOX_TIMEOUT",
    flag: "--timeout",
    values: ["5s", "1h30m", "750"],
    parsed: [5_000, 5_400_000, 750],
    def: 10_000,
  },
  {
    seed: "ProxyNodeIP",
    key: "proxyNodeIp",
    env: "SANDBOX_EXPORTER_PROXY_NODE_IP",
    flag: "--proxy-node-ip",
    values: ["10.0.0.1", "10.0.0.2", "fd00::3"],
    parsed: ["10.0.0.1", "10.0.0.2", "fd00::3"],
    def: "",
  },
  {
    seed: "ProxyPortHTTP",
    key: "proxyPortHttp",
    env: "SANDBOX_EXPORTER_PROXY_PORT_HTTP",
    flag: "--proxy-port-http",
    values: [8081, "8082", "8083"],
    parsed: [8081, 8082, 8083],
    def: 0,
  },
  {
    seed: "ProxyScheme",
    key: "proxyScheme",
    env: "SANDBOX_EXPORTER_PROXY_SCHEME",
    flag: "--proxy-scheme",
    values: ["http", "https", "http"],
    parsed: ["http", "https", "http"],
    def: "https",
  },
] as const;

describe("loadConfig: precedence of the seed client's fields", () => {
  describe.each(SEED_FIELDS)("$seed", ({ seed, key, env, flag, values, parsed, def }) => {
    const [fileValue, flagValue, envValue] = values;
    const [fromFile, fromFlag, fromEnv] = parsed;
    const yaml = { "c.yaml": `${seed}: ${JSON.stringify(fileValue)}\n` };
    const field = (r: LoadedConfig) => (r.config.platform as Record<string, unknown>)[key];
    const path = `platform.${key}`;
    const flagArgs = flag && flagValue !== undefined ? [flag, flagValue] : [];

    it("defaults when no source sets it", () => {
      const r = load([]);
      expect(field(r)).toBe(def);
      expect(r.sources[path]).toBe("default");
    });

    it("takes the config file's value under the seed name over the default", () => {
      const r = load(["--config", "c.yaml"], {}, yaml);
      expect(field(r)).toBe(fromFile);
      expect(r.sources[path]).toBe("file");
    });

    it("takes the config file's value under its nested name too", () => {
      const nested = { "c.yaml": `platform:\n  ${key}: ${JSON.stringify(fileValue)}\n` };
      expect(field(load(["--config", "c.yaml"], {}, nested))).toBe(fromFile);
    });

    if (flag !== undefined) {
      it("takes the flag over the config file", () => {
        const r = load(["--config", "c.yaml", ...flagArgs], {}, yaml);
        expect(field(r)).toBe(fromFlag);
        expect(r.sources[path]).toBe("flag");
      });
    } else {
      it("has no flag, so it never shows in ps", () => {
        expect(problemsOf(["--api-key", "k"]).format()).toContain("no --api-key flag");
      });
    }

    it("takes the environment over the flag, the config file and the default", () => {
      const r = load(["--config", "c.yaml", ...flagArgs], { [env]: String(envValue) }, yaml);
      expect(field(r)).toBe(fromEnv);
      expect(r.sources[path]).toBe("env");
      expect(field(load([], { [env]: String(envValue) }))).toBe(fromEnv);
    });
  });
});

describe("loadConfig: other settings", () => {
  it("lets flags beat the file and the environment beat both for exporter settings", () => {
    const file = { "c.yaml": "poll:\n  pageLimit: 10\n  schedule: 30s\nlog: {level: warn}\n" };
    const r = load(
      ["--config", "c.yaml", "--page-limit", "20", "--log-level", "debug"],
      { SANDBOX_EXPORTER_LOG_LEVEL: "error" },
      file,
    );
    expect(r.config.poll.pageLimit).toBe(20);
    expect(r.config.poll.schedule).toEqual({ kind: "interval", ms: 30_000, text: "30s" });
    expect(r.config.log.level).toBe("error");
    expect(r.sources).toMatchObject({
      "poll.pageLimit": "flag",
      "poll.schedule": "file",
      "log.level": "env",
      "log.format": "default",
    });
  });

  it("reads a JSON config file", () => {
    const json = JSON.stringify({
      Timeout: 2500,
      poll: { schedule: "*/30 * * * * *", nodeDetails: true },
      metrics: { metadataLabels: ["team", "env"], perSandboxMetrics: true },
      fieldMap: { sandbox: { id: "sandbox_uuid" } },
      states: { running: ["up"] },
    });
    const { config } = load(["--config", "c.json"], {}, { "c.json": json });
    expect(config.platform.timeoutMs).toBe(2_500);
    expect(config.poll).toMatchObject({
      schedule: { kind: "cron", text: "*/30 * * * * *" },
      nodeDetails: true,
    });
    expect(config.metrics.metadataLabels).toEqual(["team", "env"]);
    expect(config.fieldMap.sandbox).toEqual({ id: "sandbox_uuid" });
    expect(config.states).toEqual({ running: ["up"], paused: ["paused", "suspended"] });
  });

  it("reads a YAML config file with every section", () => {
    const yaml = [
      "server:",
      "  listen: '[::1]:9464'",
      `  basicAuthUsers: {alice: "${BCRYPT}"}`,
      "  tlsCertFile: /tls/crt",
      "  tlsKeyFile: /tls/key",
      "shard: {index: 1, total: 3}",
      "probe: {enabled: true, schedule: 2m, phaseTimeoutMs: 5s}",
      "policy: {file: /etc/p.yaml, dryRun: false}",
      "platform: {authStyle: bearer, agentPort: 50000, retries: 0}",
      "",
    ].join("\n");
    const { config } = load(["--config", "c.yaml"], {}, { "c.yaml": yaml });
    expect(config.server.listen).toBe("[::1]:9464");
    expect(config.server.basicAuthUsers).toEqual({ alice: BCRYPT });
    expect(config.shard).toEqual({ index: 1, total: 3, fromHostname: false });
    expect(config.probe).toMatchObject({
      enabled: true,
      schedule: { kind: "interval", ms: 120_000, text: "2m" },
      phaseTimeoutMs: 5_000,
    });
    expect(config.policy).toMatchObject({ file: "/etc/p.yaml", dryRun: false, enabled: true });
    expect(config.platform).toMatchObject({ authStyle: "bearer", agentPort: 50_000, retries: 0 });
  });

  it("refuses unknown keys in the probe section as in every other, with the hint", () => {
    const err = problemsOf(
      ["--config", "c.yaml"],
      {},
      { "c.yaml": "probe: {futureSetting: 1, phaseTimeout: 5s}\n" },
    );
    expect(err.format().split("\n").sort()).toEqual([
      "probe.futureSetting (file c.yaml:probe.futureSetting): expected a known setting (see --help)",
      "probe.phaseTimeout (file c.yaml:probe.phaseTimeout): expected a known setting (see --help); did you mean probe.phaseTimeoutMs?",
    ]);
  });

  it("refuses platform.envProxy in a config file: it is derived from the environment, not set", () => {
    const err = problemsOf(
      ["--config", "c.yaml"],
      {},
      { "c.yaml": "platform: {envProxy: true, timeoutMs: 5s}\n" },
    );
    expect(err.format()).toBe(
      "platform.envProxy (file c.yaml:platform.envProxy): expected a known setting (see --help)",
    );
    const nested = problemsOf(
      ["--config", "c.yaml"],
      {},
      { "c.yaml": "platform: {envProxy: {a: 1}}\n" },
    );
    expect(nested.format()).toBe(
      "platform.envProxy.a (file c.yaml:platform.envProxy.a): expected a known setting (see --help)",
    );
    const derived = load([], { HTTPS_PROXY: "http://proxy.internal:3128" });
    expect(derived.config.platform.envProxy).toBe(true);
  });

  it("parses both schedules once, into intervals or cron expressions", () => {
    const { config } = load(["--poll-schedule", "*/5 * * * * *"], {
      SANDBOX_EXPORTER_PROBE_SCHEDULE: "2m",
    });
    expect(config.poll.schedule).toEqual({ kind: "cron", text: "*/5 * * * * *" });
    expect(config.probe.schedule).toEqual({ kind: "interval", ms: 120_000, text: "2m" });
    const defaults = load([]).config;
    expect(defaults.poll.schedule).toEqual({ kind: "interval", ms: 15_000, text: "15s" });
    expect(defaults.probe.schedule).toEqual({ kind: "interval", ms: 60_000, text: "60s" });
  });

  it("treats emptied YAML keys as unset", () => {
    const emptied = { "c.yaml": "poll:\n  pageLimit:\nlog:\n" };
    expect(load(["--config", "c.yaml"], {}, emptied).config.poll.pageLimit).toBe(100);
  });

  it("takes the config file's name from SANDBOX_EXPORTER_CONFIG over --config", () => {
    const map = { "a.yaml": "poll: {pageLimit: 1}", "b.yaml": "poll: {pageLimit: 2}" };
    const r = load(["--config", "a.yaml"], { SANDBOX_EXPORTER_CONFIG: "b.yaml" }, map);
    expect(r.config.poll.pageLimit).toBe(2);
  });

  it("parses booleans, lists and integers from text", () => {
    const { config } = load(["--per-sandbox-metrics", "--node-details=false", "--shard", "2"], {
      SANDBOX_EXPORTER_METADATA_LABELS: " team, env ,,",
      SANDBOX_EXPORTER_TOTAL_SHARDS: "4",
      SANDBOX_EXPORTER_PROBE_ENABLED: "yes",
      SANDBOX_EXPORTER_POLICY_DRY_RUN: "off",
    });
    expect(config.metrics.perSandboxMetrics).toBe(true);
    expect(config.poll.nodeDetails).toBe(false);
    expect(config.metrics.metadataLabels).toEqual(["team", "env"]);
    expect(config.shard).toEqual({ index: 2, total: 4, fromHostname: false });
    expect(config.probe.enabled).toBe(true);
    expect(config.policy.dryRun).toBe(false);
  });

  it("ignores empty environment variables, as an unset one", () => {
    expect(
      load(["--page-limit", "7"], { SANDBOX_EXPORTER_PAGE_LIMIT: "" }).config.poll.pageLimit,
    ).toBe(7);
  });

  it.each(["0.0.0.0:9464", ":9464", "[::1]:9464", "localhost:0", "127.0.0.1:65535"])(
    "accepts the listen address %s",
    (listen) => {
      expect(load(["--listen", listen]).config.server.listen).toBe(listen);
    },
  );

  it("notes a set proxy variable, either case, for the control channel's dispatcher", () => {
    expect(load([]).config.platform.envProxy).toBe(false);
    expect(load([], { NO_PROXY: "example.com", HTTP_PROXY: "" }).config.platform.envProxy).toBe(
      false,
    );
    for (const name of ["http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY"]) {
      const r = load([], { [name]: "http://proxy.internal:3128" });
      expect(r.config.platform.envProxy, name).toBe(true);
      expect(r.sources["platform.envProxy"]).toBe("env");
    }
  });

  it("gives every leaf a source, even ones no source set", () => {
    const { sources } = load([]);
    expect(sources["platform.apiUrl"]).toBe("default");
    expect(sources["metrics.metadataLabels"]).toBe("default");
    expect(Object.values(sources).every((s) => s === "default")).toBe(true);
  });

  it("returns the help and version requests, even when the rest does not validate", () => {
    const r = loadConfig({ argv: ["--help", "--page-limit", "x"], env: {}, requireApi: true });
    expect(r.help).toBe(true);
    expect(r.config.poll.pageLimit).toBe(100);
    expect(load(["--version"]).version).toBe(true);
    expect(load([]).help).toBe(false);
  });
});

describe("loadConfig: a config file that cannot be used is refused, naming it", () => {
  const BOMB = [
    'a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]',
    ..."bcdefghi".split("").map((k, i) => {
      const prev = "abcdefghi"[i] as string;
      return `${k}: &${k} [${Array(9).fill(`*${prev}`).join(", ")}]`;
    }),
    "",
  ].join("\n");

  it.each([
    ["an empty file", ""],
    ["a file of blank lines", "\n  \n\t\n"],
    ["a file of comments only", "# poll:\n#   pageLimit: 5\n"],
    ["a file holding only null", "~\n"],
    ["a document marker and nothing else", "---\n"],
  ])("%s", (_name, text) => {
    const err = problemsOf(["--config", "conf/c.yaml"], {}, { "conf/c.yaml": text });
    expect(err.format()).toBe(
      "(config file) (file conf/c.yaml): expected a mapping of settings at the top level, got an empty file",
    );
  });

  it("an alias bomb (billion laughs), without expanding it", () => {
    const err = problemsOf(["--config", "conf/bomb.yaml"], {}, { "conf/bomb.yaml": BOMB });
    expect(err.problems).toHaveLength(1);
    expect(err.format()).toMatch(
      /^\(config file\) \(file conf\/bomb\.yaml\): expected valid YAML or JSON, got ".*alias/,
    );
  });

  it("a file named by SANDBOX_EXPORTER_CONFIG the same way", () => {
    const err = problemsOf([], { SANDBOX_EXPORTER_CONFIG: "env.yaml" }, { "env.yaml": "# \n" });
    expect(err.format()).toContain("(file env.yaml): expected a mapping of settings");
  });

  it("a second YAML document, a duplicate key and a scalar at the top level", () => {
    const second = problemsOf(["--config", "c.yaml"], {}, { "c.yaml": "a: 1\n---\nb: 2\n" });
    expect(second.format()).toMatch(/^\(config file\) \(file c\.yaml:2:1\): expected valid YAML/);
    const dup = problemsOf(["--config", "c.yaml"], {}, { "c.yaml": "poll: {}\npoll: {}\n" });
    expect(dup.format()).toMatch(/^\(config file\) \(file c\.yaml:2:1\): expected valid YAML/);
    expect(problemsOf(["--config", "c.yaml"], {}, { "c.yaml": "15s\n" }).format()).toBe(
      "(config file) (file c.yaml): expected a mapping of settings at the top level, got a string",
    );
  });

  it("an empty --config path", () => {
    expect(problemsOf(["--config="]).format()).toBe(
      '(config file) (flag --config): expected a file path, got ""',
    );
  });

  it("deeply nested input, before yaml's recursion can overflow the stack", () => {
    const deep = `${"[".repeat(50_000)}${"]".repeat(50_000)}`;
    expect(
      problemsOf(["--config", "c.json"], {}, { "c.json": `{"poll": ${deep}}` }).format(),
    ).toMatch(
      /^\(config file\) \(file c\.json:1:\d+\): expected valid YAML or JSON, got "nested deeper than 64 levels"/,
    );
    const blocks = `poll:\n  x:\n    ${"- ".repeat(50_000)}1\n`;
    expect(problemsOf(["--config", "c.yaml"], {}, { "c.yaml": blocks }).format()).toContain(
      "nested deeper than 64 levels",
    );
  });

  it("an alias inside the node it names, which would make a cycle", () => {
    const err = problemsOf(["--config", "c.yaml"], {}, { "c.yaml": "poll: &p {x: *p}\n" });
    expect(err.format()).toBe(
      '(config file) (file c.yaml:1:14): expected valid YAML or JSON, got "alias *p refers to itself"',
    );
  });

  it("a repeated key in a wide mapping, at the repeat", () => {
    const users = Array.from({ length: 1000 }, (_, i) => `    u${i}: ${"ab".repeat(32)}`);
    const text = ["server:", "  basicAuthUsers:", ...users, `    u7: ${"cd".repeat(32)}`, ""];
    const err = problemsOf(["--config", "c.yaml"], {}, { "c.yaml": text.join("\n") });
    expect(err.format()).toBe(
      `(config file) (file c.yaml:1003:5): expected valid YAML or JSON, got "Map keys must be unique: \\"u7\\" repeats"`,
    );
  });

  it("still reads aliases used the ordinary way", () => {
    const text = "x-labels: &labels [team, env]\nstates:\n  running: &up [up]\n  paused: *up\n";
    const err = problemsOf(["--config", "c.yaml"], {}, { "c.yaml": text });
    expect(err.format()).toBe(
      "x-labels (file c.yaml:x-labels): expected a known setting (see --help)",
    );
    const ok =
      "states:\n  running: &up [up, busy]\n  paused: *up\nmetrics: {metadataLabels: *up}\n";
    const { config } = load(["--config", "c.yaml"], {}, { "c.yaml": ok });
    expect(config.states).toEqual({ running: ["up", "busy"], paused: ["up", "busy"] });
    expect(config.metrics.metadataLabels).toEqual(["up", "busy"]);
  });
});

describe("loadConfig: settings other parts consume", () => {
  it("defaults them in the schema", () => {
    const { config, sources } = load([]);
    expect(config.server.enableLifecycle).toBe(false);
    expect(config.metrics.maxLabelValueLength).toBe(1024);
    expect(config.poll.confirmDropRatio).toBe(0.5);
    expect(config.poll.maxBackoffMs).toBe(300_000);
    expect(sources["poll.maxBackoffMs"]).toBe("default");
    // 10,000 pages of 100 was exactly 1,000,000 sandboxes: one more failed every walk.
    expect(config.poll.maxPages).toBe(100_000);
    expect(config.probe).toMatchObject({
      command: "echo {nonce}",
      filePath: "/tmp/sandbox-exporter-probe.txt",
      phaseTimeoutMs: 20_000,
      timeoutMs: 60_000,
      instance: "default",
      template: "base",
    });
  });

  it("takes each from a flag, the environment and the file", () => {
    const flags = load([
      "--web.enable-lifecycle",
      "--max-label-value-length",
      "64",
      "--confirm-drop-ratio",
      "0.25",
      "--poll-max-backoff",
      "1m30s",
    ]).config;
    expect(flags.server.enableLifecycle).toBe(true);
    expect(flags.metrics.maxLabelValueLength).toBe(64);
    expect(flags.poll).toMatchObject({ confirmDropRatio: 0.25, maxBackoffMs: 90_000 });
    const env = load([], {
      SANDBOX_EXPORTER_WEB_ENABLE_LIFECYCLE: "yes",
      SANDBOX_EXPORTER_MAX_LABEL_VALUE_LENGTH: "16",
      SANDBOX_EXPORTER_CONFIRM_DROP_RATIO: "1",
      SANDBOX_EXPORTER_POLL_MAX_BACKOFF: "45000",
    }).config;
    expect(env.server.enableLifecycle).toBe(true);
    expect(env.metrics.maxLabelValueLength).toBe(16);
    expect(env.poll).toMatchObject({ confirmDropRatio: 1, maxBackoffMs: 45_000 });
    const yaml =
      "server: {enableLifecycle: true}\nmetrics: {maxLabelValueLength: 200}\npoll: {confirmDropRatio: .75, maxBackoffMs: 10m}\n";
    const file = load(["--config", "c.yaml"], {}, { "c.yaml": yaml }).config;
    expect(file.server.enableLifecycle).toBe(true);
    expect(file.metrics.maxLabelValueLength).toBe(200);
    expect(file.poll).toMatchObject({ confirmDropRatio: 0.75, maxBackoffMs: 600_000 });
  });

  it("accepts --web-enable-lifecycle, spelt like the other --web-* flags, and =false", () => {
    expect(load(["--web-enable-lifecycle"]).config.server.enableLifecycle).toBe(true);
    expect(load(["--web.enable-lifecycle=false"]).config.server.enableLifecycle).toBe(false);
  });

  it.each([
    [
      ["--max-label-value-length", "15"],
      "metrics.maxLabelValueLength (flag --max-label-value-length): expected an integer >= 16, got 15",
    ],
    [
      ["--max-label-value-length", "1e3"],
      'metrics.maxLabelValueLength (flag --max-label-value-length): expected an integer >= 16, got "1e3"',
    ],
    [
      ["--confirm-drop-ratio", "0"],
      "poll.confirmDropRatio (flag --confirm-drop-ratio): expected a number above 0 and at most 1, got 0",
    ],
    [
      ["--confirm-drop-ratio", "1.01"],
      "poll.confirmDropRatio (flag --confirm-drop-ratio): expected a number above 0 and at most 1, got 1.01",
    ],
    [
      ["--confirm-drop-ratio", "half"],
      'poll.confirmDropRatio (flag --confirm-drop-ratio): expected a number above 0 and at most 1, got "half"',
    ],
    [
      ["--poll-max-backoff", "0s"],
      'poll.maxBackoffMs (flag --poll-max-backoff): expected a duration like 30s, 5m, 1h30m or milliseconds, above 0 and at most 24d, got "0s"',
    ],
    [
      ["--web.enable-lifecycle=maybe"],
      'server.enableLifecycle (flag --web.enable-lifecycle): expected true or false, got "maybe"',
    ],
  ])("refuses %j", (argv, line) => {
    expect(problemsOf(argv).format()).toBe(line);
  });

  it("suggests the Ms name for a duration key written without it", () => {
    const err = problemsOf(["--config", "c.yaml"], {}, { "c.yaml": "poll: {maxBackoff: 5m}\n" });
    expect(err.format()).toContain("did you mean poll.maxBackoffMs?");
  });
});

describe("loadConfig: the API key file", () => {
  it("reads the key from the file SANDBOX_API_KEY_FILE names, trimmed", () => {
    const r = load([], { SANDBOX_API_KEY_FILE: "/run/k" }, { "/run/k": "  s3cret\n" });
    expect(r.config.platform.apiKey).toBe("s3cret");
    expect(r.sources["platform.apiKey"]).toBe("env");
  });

  it("reads the key file named by --api-key-file or by apiKeyFile in the config file", () => {
    expect(load(["--api-key-file", "/k"], {}, { "/k": "a" }).config.platform.apiKey).toBe("a");
    const map = { "c.yaml": "platform: {apiKeyFile: /k}", "/k": "b" };
    expect(load(["--config", "c.yaml"], {}, map).config.platform.apiKey).toBe("b");
  });

  it("lets a key from a higher-precedence source win over the other form", () => {
    const map = { "c.yaml": "ApiKey: from-file", "/k": "from-key-file" };
    // The key file comes from the environment, the key itself only from the file.
    const r = load(["--config", "c.yaml"], { SANDBOX_API_KEY_FILE: "/k" }, map);
    expect(r.config.platform.apiKey).toBe("from-key-file");
    const r2 = load(["--api-key-file", "/k"], { SANDBOX_API_KEY: "from-env" }, map);
    expect(r2.config.platform.apiKey).toBe("from-env");
  });

  it("refuses a key and a key file from the same source", () => {
    const err = problemsOf(
      [],
      { SANDBOX_API_KEY: "k1", SANDBOX_API_KEY_FILE: "/k" },
      { "/k": "k2" },
    );
    expect(err.format()).toBe(
      "platform.apiKeyFile (env SANDBOX_API_KEY_FILE): expected either the API key (SANDBOX_API_KEY) or a key file, not both",
    );
  });

  it("names an unreadable or empty key file", () => {
    expect(problemsOf([], { SANDBOX_API_KEY_FILE: "/none" }).format()).toContain(
      'platform.apiKeyFile (env SANDBOX_API_KEY_FILE): expected a readable file, got "ENOENT',
    );
    expect(problemsOf(["--api-key-file", "/e"], {}, { "/e": "\n" }).format()).toContain(
      "platform.apiKeyFile (flag --api-key-file): expected a file holding the API key",
    );
  });

  it("touches no disk when no readFile is given", () => {
    expect(() => loadConfig({ argv: ["--config", "/etc/passwd"], env: {} })).toThrow(
      /\(config file\) \(file \/etc\/passwd\): expected a readable file, got "no file reader was given"/,
    );
  });
});

describe("loadConfig: problems name the field, its source and what was expected", () => {
  const TIMEOUT_EXPECTED =
    "expected a duration like 30s, 5m, 1h30m or milliseconds, above 0 and at most 24d";
  it.each([
    [
      "a bad duration in the environment",
      [],
      { SANDBOX_TIMEOUT: "abc" },
      {},
      `platform.timeoutMs (env SANDBOX_TIMEOUT): ${TIMEOUT_EXPECTED}, got "abc"`,
    ],
    [
      "a bad duration on the command line",
      ["--timeout", "5 minutes"],
      {},
      {},
      `platform.timeoutMs (flag --timeout): ${TIMEOUT_EXPECTED}, got "5 minutes"`,
    ],
    [
      "a bad duration in the file under the seed name",
      ["--config", "c.yaml"],
      {},
      { "c.yaml": "Timeout: soon\n" },
      `platform.timeoutMs (file c.yaml:Timeout): ${TIMEOUT_EXPECTED}, got "soon"`,
    ],
    [
      "a zero timeout",
      ["--timeout", "0s"],
      {},
      {},
      `platform.timeoutMs (flag --timeout): ${TIMEOUT_EXPECTED}, got "0s"`,
    ],
    [
      "a bad cron expression",
      ["--poll-schedule", "61 * * * *"],
      {},
      {},
      'poll.schedule (flag --poll-schedule): expected an interval of whole seconds like 15s, or a cron expression like */15 * * * * * (CronPattern: Invalid value for minute: 61), got "61 * * * *"',
    ],
    [
      "a bad probe cron expression",
      ["--probe-schedule", "* * * * * * * *"],
      {},
      {},
      "probe.schedule (flag --probe-schedule): expected an interval of whole seconds like 15s, or a cron expression like */15 * * * * * (",
    ],
    [
      "a sub-second interval",
      [],
      { SANDBOX_EXPORTER_POLL_SCHEDULE: "500ms" },
      {},
      "poll.schedule (env SANDBOX_EXPORTER_POLL_SCHEDULE): expected an interval of whole seconds",
    ],
    [
      "a bad scheme",
      [],
      { SANDBOX_EXPORTER_PROXY_SCHEME: "ftp" },
      {},
      'platform.proxyScheme (env SANDBOX_EXPORTER_PROXY_SCHEME): expected one of http, https, got "ftp"',
    ],
    [
      "a bad auth style",
      ["--auth-style", "basic"],
      {},
      {},
      'platform.authStyle (flag --auth-style): expected one of x-api-key, bearer, got "basic"',
    ],
    [
      "shard >= total",
      ["--shard", "2", "--total-shards", "2"],
      {},
      {},
      "shard.index (flag --shard): expected a shard index below shard.total (2), got 2",
    ],
    [
      "a non-integer page limit",
      ["--page-limit", "ten"],
      {},
      {},
      'poll.pageLimit (flag --page-limit): expected an integer from 1 to 10000, got "ten"',
    ],
    [
      "an out-of-range page limit in the file",
      ["--config", "c.yaml"],
      {},
      { "c.yaml": "poll:\n  pageLimit: 0\n" },
      "poll.pageLimit (file c.yaml:poll.pageLimit): expected an integer from 1 to 10000, got 0",
    ],
    [
      "a port out of range",
      ["--proxy-port-http", "70000"],
      {},
      {},
      "platform.proxyPortHttp (flag --proxy-port-http): expected an integer from 0 to 65535, got 70000",
    ],
    [
      "a bad API URL",
      [],
      { SANDBOX_API_URL: "api.example.com" },
      {},
      'platform.apiUrl (env SANDBOX_API_URL): expected an http(s) URL like https://api.example.com, got "api.example.com"',
    ],
    [
      "a bad listen address",
      ["--listen", "9464"],
      {},
      {},
      'server.listen (flag --listen): expected host:port, [::1]:port or :port, got "9464"',
    ],
    [
      "a bad boolean",
      ["--probe=maybe"],
      {},
      {},
      'probe.enabled (flag --probe): expected true or false, got "maybe"',
    ],
    [
      "a bad metric namespace",
      [],
      { SANDBOX_EXPORTER_NAMESPACE: "my-app" },
      {},
      'metrics.namespace (env SANDBOX_EXPORTER_NAMESPACE): expected a metric name prefix matching [a-zA-Z_][a-zA-Z0-9_]*, got "my-app"',
    ],
    [
      "a metadata key that makes no label",
      ["--metadata-labels", "team,--"],
      {},
      {},
      'metrics.metadataLabels.1 (flag --metadata-labels): expected a metadata key with at least one letter or digit, got "--"',
    ],
    [
      "a log level pino does not have",
      ["--log-level", "verbose"],
      {},
      {},
      'log.level (flag --log-level): expected one of trace, debug, info, warn, error, fatal, silent, got "verbose"',
    ],
    [
      "a TLS certificate without its key",
      ["--web-tls-cert-file", "/tls/crt"],
      {},
      {},
      "server.tlsKeyFile (default): expected to be set together with server.tlsCertFile",
    ],
    [
      "a basic-auth password that is not a bcrypt hash",
      ["--config", "c.yaml"],
      {},
      { "c.yaml": "server: {basicAuthUsers: {bob: hunter2}}\n" },
      `server.basicAuthUsers.bob (file c.yaml:server.basicAuthUsers.bob): expected a bcrypt hash (htpasswd -nBC 10 "" | tr -d ':\\n'), got "***"`,
    ],
    [
      "an unknown flag",
      ["--bogus"],
      {},
      {},
      "argv (flag --bogus): expected a known flag (see --help)",
    ],
    [
      "a flag without its value",
      ["--page-limit"],
      {},
      {},
      "argv (flag --page-limit): expected a value after --page-limit",
    ],
    [
      "a stray argument",
      ["config.yaml"],
      {},
      {},
      'argv (flag argument 1): expected a flag (see --help), got "config.yaml"',
    ],
    [
      "bad YAML syntax, naming the file and line",
      ["--config", "c.yaml"],
      {},
      { "c.yaml": "poll:\n  pageLimit: [1\n" },
      "(config file) (file c.yaml:",
    ],
    [
      "a config file that is not a mapping",
      ["--config", "c.yaml"],
      {},
      { "c.yaml": "- a\n- b\n" },
      "(config file) (file c.yaml): expected a mapping of settings at the top level",
    ],
    [
      "a missing config file",
      ["--config", "missing.yaml"],
      {},
      {},
      '(config file) (file missing.yaml): expected a readable file, got "ENOENT',
    ],
    [
      "a misspelt key in the file",
      ["--config", "c.yaml"],
      {},
      { "c.yaml": "poll:\n  page_limit: 5\n" },
      "poll.page_limit (file c.yaml:poll.page_limit): expected a known setting (see --help); did you mean poll.pageLimit?",
    ],
    [
      "an unknown section in the file",
      ["--config", "c.yaml"],
      {},
      { "c.yaml": "polling: {}\n" },
      "polling (file c.yaml:polling): expected a known setting (see --help)",
    ],
    [
      "a section that is not a mapping",
      ["--config", "c.yaml"],
      {},
      { "c.yaml": "poll: 15s\n" },
      'poll (file c.yaml:poll): expected a mapping of settings, got "15s"',
    ],
    [
      "a seed name and its nested name both in the file",
      ["--config", "c.yaml"],
      {},
      { "c.yaml": "Timeout: 5s\nplatform: {timeoutMs: 6s}\n" },
      "platform.timeoutMs (file c.yaml:platform.timeoutMs): expected either Timeout or platform.timeoutMs, not both",
    ],
  ] as Array<[string, string[], Record<string, string>, Record<string, string>, string]>)(
    "%s",
    (_name, argv, env, fileMap, line) => {
      const err = problemsOf(argv, env, fileMap);
      expect(err.code).toBe("ERR_CONFIG");
      expect(
        err
          .format()
          .split("\n")
          .some((l) => l.startsWith(line)),
      ).toBe(true);
    },
  );

  it("reports YAML syntax errors with the file, line and column", () => {
    const err = problemsOf(["--config", "conf/c.yaml"], {}, { "conf/c.yaml": "a: 1\nb: [\n" });
    expect(err.problems[0]).toMatchObject({
      path: "(config file)",
      source: "file",
      origin: expect.stringMatching(/^conf\/c\.yaml:\d+:\d+$/),
      expected: "valid YAML or JSON",
    });
  });

  it("reports every problem at once, one line each, from every source", () => {
    const err = problemsOf(
      ["--config", "c.yaml", "--timeout", "x", "--bogus"],
      { SANDBOX_EXPORTER_PROXY_SCHEME: "gopher", SANDBOX_EXPORTER_SHARD: "5" },
      { "c.yaml": "poll: {pageLimit: 0, schedule: every minute}\n" },
    );
    expect(err.problems.map((p) => `${p.path} ${p.source}`).sort()).toEqual([
      "argv flag",
      "platform.proxyScheme env",
      "platform.timeoutMs flag",
      "poll.pageLimit file",
      "poll.schedule file",
      "shard.index env",
    ]);
    expect(err.format().split("\n")).toHaveLength(6);
  });

  it("requires an API URL when asked to, naming where it can be set", () => {
    expect(problemsOf([], {}, {}, true).format()).toBe(
      "platform.apiUrl (default): expected the management API URL (SANDBOX_API_URL, --api-url, or ApiURL in the config file)",
    );
    expect(() =>
      loadConfig({ argv: [], env: { SANDBOX_API_URL: "http://x" }, requireApi: true }),
    ).not.toThrow();
  });
});

describe("loadConfig: the API key never appears in a problem", () => {
  const KEY = "hunter2-very-secret";
  it.each([
    ["a key with a line break in the environment", [], { SANDBOX_API_KEY: `${KEY}\nX: y` }, {}],
    [
      "a key file with a control character",
      [],
      { SANDBOX_API_KEY_FILE: "/k" },
      { "/k": `${KEY}\u0007` },
    ],
    [
      "a key of the wrong type in the file",
      ["--config", "c.yaml"],
      {},
      { "c.yaml": `ApiKey: [${KEY}]\n` },
    ],
    [
      "a key on a YAML line that does not parse",
      ["--config", "c.yaml"],
      {},
      { "c.yaml": `ApiKey: "${KEY}\n` },
    ],
    ["a key passed to a flag that does not exist", ["--api-key", KEY], {}, {}],
    ["a key passed inline to a flag that does not exist", [`--api-key=${KEY}`], {}, {}],
    ["credentials in the API URL", [], { SANDBOX_API_URL: `ftp://user:${KEY}@host` }, {}],
  ] as Array<[string, string[], Record<string, string>, Record<string, string>]>)(
    "%s",
    (_name, argv, env, fileMap) => {
      const err = problemsOf(argv, env, fileMap);
      expect(err.problems.length).toBeGreaterThan(0);
      expect(err.format()).not.toContain(KEY);
      expect(err.message).not.toContain(KEY);
      expect(JSON.stringify(err.problems)).not.toContain(KEY);
    },
  );

  it("says *** where the malformed key would be shown", () => {
    const err = problemsOf([], { SANDBOX_API_KEY: `${KEY}\r\nX-Injected: 1` });
    expect(err.format()).toBe(
      'platform.apiKey (env SANDBOX_API_KEY): expected an API key without line breaks or control characters, got "***"',
    );
  });
});

describe("loadConfig: platform flavors", () => {
  const env = { SANDBOX_API_URL: "https://api.e2b.app", SANDBOX_API_KEY: "k" };

  it("presets E2B's hosted API: no prefix, pages of at most 100", () => {
    const { config } = loadConfig({ argv: ["--flavor", "e2b", "--page-limit", "500"], env });
    expect(config.platform.flavor).toBe("e2b");
    expect(config.platform.apiPrefix).toBe("");
    expect(config.poll.pageLimit).toBe(100);
  });

  it("keeps /sandboxapi/v1 by default, and an explicit prefix over either flavor's", () => {
    expect(loadConfig({ argv: [], env }).config.platform.apiPrefix).toBe("/sandboxapi/v1");
    const { config } = loadConfig({
      argv: ["--flavor", "e2b", "--api-prefix", "/api/v2"],
      env: { ...env, SANDBOX_EXPORTER_FLAVOR: "sandboxapi" },
    });
    expect(config.platform.apiPrefix).toBe("/api/v2");
    expect(config.platform.flavor).toBe("sandboxapi");
  });

  it("refuses an unknown flavor and a prefix that is not a path, naming the field", () => {
    expect(() => loadConfig({ argv: ["--flavor", "modal"], env })).toThrow(/platform\.flavor/);
    expect(() => loadConfig({ argv: ["--api-prefix", "sandboxapi/v1"], env })).toThrow(
      /platform\.apiPrefix/,
    );
  });
});

describe("loadConfig: the shard from the StatefulSet pod's hostname", () => {
  const load = (argv: string[], env: Record<string, string> = {}, hostname?: string) =>
    loadConfig({
      argv: ["--api-url", "http://127.0.0.1:9", ...argv],
      env,
      ...(hostname !== undefined ? { hostname } : {}),
    });
  const problem = (f: () => unknown): string => {
    try {
      f();
    } catch (err) {
      if (err instanceof ConfigError) return err.format();
      throw err;
    }
    return "";
  };

  it("takes the index from the ordinal of name-N, from HOSTNAME or the machine's name", () => {
    const args = ["--shard-from-hostname", "--total-shards", "4"];
    expect(load(args, { HOSTNAME: "sandbox-exporter-3" }).config.shard).toMatchObject({
      index: 3,
      total: 4,
    });
    expect(load(args, {}, "sandbox-exporter-2").config.shard.index).toBe(2);
    expect(
      load([], { SANDBOX_EXPORTER_SHARD_FROM_HOSTNAME: "true", HOSTNAME: "x-0" }).config.shard,
    ).toMatchObject({ index: 0, total: 1 });
  });

  it("refuses a hostname without an ordinal, an ordinal past the total, or an explicit --shard too", () => {
    const args = ["--shard-from-hostname", "--total-shards", "2"];
    expect(problem(() => load(args, { HOSTNAME: "exporter" }))).toMatch(
      /shard\.fromHostname.*--shard-from-hostname.*hostname ending in -<ordinal>.*"exporter"/,
    );
    expect(problem(() => load(args, { HOSTNAME: "exporter-2" }))).toMatch(
      /shard\.index.*hostname exporter-2.*below shard\.total \(2\)/,
    );
    expect(problem(() => load([...args, "--shard", "1"], { HOSTNAME: "exporter-1" }))).toMatch(
      /either the shard index \(--shard\) or the hostname's ordinal/,
    );
  });
});
