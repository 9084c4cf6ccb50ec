import { describe, expect, it } from "vitest";
import { ConfigError, helpText, loadConfig, redactConfig } from "../../src/config/load.js";

const SEED = [
  // [seed name, config path, env var, flag, file value, flag value, env value, parsed env value, default]
  [
    "ApiURL",
    "apiUrl",
    "SANDBOX_API_URL",
    "--api-url",
    "http://file.test",
    "http://flag.test",
    "http://env.test",
    "http://env.test",
    "",
  ],
  [
    "ApiKey",
    "apiKey",
    "SANDBOX_API_KEY",
    undefined,
    "file-key",
    undefined,
    "env-key",
    "env-key",
    "",
  ],
  [
    "SandboxDomain",
    "sandboxDomain",
    "SANDBOX_DOMAIN",
    "--sandbox-domain",
    "file.dom",
    "flag.dom",
    "env.dom",
    "env.dom",
    "e2b.app",
  ],
  ["Timeout", "timeoutMs", "SANDBOX_TIMEOUT", "--timeout", "5s", "6s", "1m", 60_000, 10_000],
  [
    "ProxyNodeIP",
    "proxyNodeIp",
    "SANDBOX_EXPORTER_PROXY_NODE_IP",
    "--proxy-node-ip",
    "10.0.0.1",
    "10.0.0.2",
    "10.0.0.3",
    "10.0.0.3",
    "",
  ],
  [
    "ProxyPortHTTP",
    "proxyPortHttp",
    "SANDBOX_EXPORTER_PROXY_PORT_HTTP",
    "--proxy-port-http",
    81,
    "82",
    "83",
    83,
    0,
  ],
  [
    "ProxyScheme",
    "proxyScheme",
    "SANDBOX_EXPORTER_PROXY_SCHEME",
    "--proxy-scheme",
    "http",
    "https",
    "http",
    "http",
    "https",
  ],
] as const;

function files(map: Record<string, string>) {
  return (path: string): string => {
    const text = map[path];
    if (text === undefined) throw new Error(`ENOENT: ${path}`);
    return text;
  };
}

describe("loadConfig precedence", () => {
  it.each(SEED)(
    "%s: env beats flag beats file beats default",
    (seed, key, env, flag, fileValue, flagValue, envValue, parsedEnv, def) => {
      const readFile = files({ "c.yaml": `${seed}: ${JSON.stringify(fileValue)}\n` });
      const platform = (argv: string[], e: Record<string, string>) =>
        loadConfig({ argv, env: e, readFile }).config.platform as unknown as Record<
          string,
          unknown
        >;
      expect(platform([], {})[key]).toBe(def);
      const fromFile = platform(["--config", "c.yaml"], {})[key];
      expect(fromFile).toBe(key === "timeoutMs" ? 5_000 : fileValue);
      if (flag && flagValue !== undefined) {
        const fromFlag = platform(["--config", "c.yaml", flag, String(flagValue)], {})[key];
        expect(fromFlag).not.toBe(fromFile);
      }
      const argv =
        flag && flagValue !== undefined
          ? ["--config", "c.yaml", flag, String(flagValue)]
          : ["--config", "c.yaml"];
      expect(platform(argv, { [env]: envValue })[key]).toBe(parsedEnv);
    },
  );

  it("reads the API key from a file when only the file is named", () => {
    const { config } = loadConfig({
      argv: [],
      env: { SANDBOX_API_KEY_FILE: "/k" },
      readFile: files({ "/k": "s3cret\n" }),
    });
    expect(config.platform.apiKey).toBe("s3cret");
  });
});

describe("loadConfig problems", () => {
  const problemsOf = (argv: string[], env: Record<string, string> = {}, fileText?: string) => {
    try {
      loadConfig({
        argv,
        env,
        readFile: files(fileText === undefined ? {} : { "c.yaml": fileText }),
      });
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      return err as ConfigError;
    }
    throw new Error("expected a ConfigError");
  };

  it.each([
    [["--timeout", "abc"], {}, "platform.timeoutMs (flag --timeout)"],
    [[], { SANDBOX_TIMEOUT: "soon" }, "platform.timeoutMs (env SANDBOX_TIMEOUT)"],
    [["--proxy-scheme", "ftp"], {}, "platform.proxyScheme (flag --proxy-scheme)"],
    [["--page-limit", "ten"], {}, "poll.pageLimit (flag --page-limit)"],
    [["--poll-schedule", "every now and then"], {}, "poll.schedule (flag --poll-schedule)"],
    [["--shard", "2", "--total-shards", "2"], {}, "shard.index"],
    [["--bogus"], {}, "argv (flag command line)"],
    [[], { SANDBOX_API_URL: "not a url" }, "platform.apiUrl (env SANDBOX_API_URL)"],
  ])("names the field and source of %j %j", (argv, env, expected) => {
    expect(problemsOf(argv as string[], env as Record<string, string>).format()).toContain(
      expected,
    );
  });

  it("names the file when YAML does not parse", () => {
    expect(problemsOf(["--config", "c.yaml"], {}, "poll: [unclosed\n").format()).toMatch(
      /\(file\) \(file c\.yaml\)/,
    );
  });

  it("reports every problem at once, one line each", () => {
    const err = problemsOf(["--timeout", "x", "--page-limit", "0"], {
      SANDBOX_EXPORTER_PROXY_SCHEME: "gopher",
    });
    expect(err.problems.map((p) => p.path).sort()).toEqual([
      "platform.proxyScheme",
      "platform.timeoutMs",
      "poll.pageLimit",
    ]);
    expect(err.format().split("\n")).toHaveLength(3);
  });

  it("never shows the API key, even when it is the bad value", () => {
    const err = problemsOf(["--config", "c.yaml"], {}, 'ApiKey: ["hunter2-secret"]\n');
    expect(err.format()).toContain("platform.apiKey");
    expect(err.format()).not.toContain("hunter2-secret");
  });

  it("requires an API URL for the daemon", () => {
    expect(() => loadConfig({ argv: [], env: {}, requireApi: true })).toThrow(/platform\.apiUrl/);
  });
});

describe("redactConfig and help", () => {
  it("shows the key as ***", () => {
    const { config } = loadConfig({ argv: [], env: { SANDBOX_API_KEY: "topsecret" } });
    expect(JSON.stringify(redactConfig(config))).not.toContain("topsecret");
    expect(redactConfig(config).platform.apiKey).toBe("***");
    expect(config.platform.apiKey).toBe("topsecret");
  });

  it("lists every flag with its environment variable", () => {
    const text = helpText();
    expect(text).toContain("--page-limit");
    expect(text).toContain("SANDBOX_EXPORTER_PAGE_LIMIT");
    expect(text).toContain("SANDBOX_TIMEOUT");
  });
});
