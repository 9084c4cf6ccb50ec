// The Docker image's commands, run the same way outside Docker: no engine runs here, so the test
// builds dist/ as the image's build stage does and starts ENTRYPOINT + CMD against the simulator.
import { execFileSync, spawn } from "node:child_process";
import { copyFileSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { startSimulator } from "../../src/simulator/index.js";
import { dockerInstruction, imageEnv, imageNodeFlags } from "../../tools/dockerfile.js";
import { output, scrapeThenTerminate } from "../helpers/child.js";

const ROOT = join(import.meta.dirname, "..", "..");
// Inside the repository, so the compiled files resolve the repository's node_modules.
const IMAGE = join(ROOT, ".tmp", `image-test-${process.pid}`);
const dockerfile = readFileSync(join(ROOT, "Dockerfile"), "utf8");

/** The JSON-array form of a Dockerfile instruction. */
function instruction(name: string): string[] {
  const argv = dockerInstruction(dockerfile, name);
  expect(argv, name).toBeDefined();
  return argv ?? [];
}

afterAll(() => rmSync(IMAGE, { recursive: true, force: true }));

describe("Docker image commands", () => {
  it("every launcher runs node with the image's flags", () => {
    const flags = imageNodeFlags(dockerfile);
    expect(flags).toContain("--max-semi-space-size=4");
    const unit = readFileSync(join(ROOT, "deploy", "systemd", "sandbox-exporter.service"), "utf8");
    expect(unit).toContain(
      `ExecStart=/usr/bin/node ${flags.join(" ")} /opt/sandbox-exporter/dist/cli.js`,
    );
    // The image's environment too, but NODE_ENV (the unit runs the production build anyway).
    const env = imageEnv(dockerfile);
    expect(env).toMatchObject({
      NODE_ENV: "production",
      GLIBC_TUNABLES: "glibc.malloc.mmap_threshold=131072",
    });
    for (const [key, value] of Object.entries(env))
      if (key !== "NODE_ENV") expect(unit).toContain(`Environment=${key}=${value}\n`);
    const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
      scripts: Record<string, string>;
    };
    expect(pkg.scripts.start).toBe(`node ${flags.join(" ")} --import tsx src/cli.ts`);
    // The StatefulSet runs the image's entrypoint as it is (no shell wrapper, no second command).
    const sts = readFileSync(join(ROOT, "deploy", "kubernetes", "statefulset.yaml"), "utf8");
    expect(sts).not.toMatch(/^\s*command:/m);
  });

  it("reads the final stage's ENV lines, and refuses a form it does not parse", () => {
    const text = [
      "FROM node AS build",
      "ENV BUILD_ONLY=1",
      "FROM node",
      "ENV A=1 B=x=y",
      "ENV C=",
      'ENTRYPOINT ["node"]',
    ].join("\n");
    expect(imageEnv(text)).toEqual({ A: "1", B: "x=y", C: "" });
    expect(() => imageEnv('FROM node\nENV A="quoted value"')).toThrow(/ENV A="quoted value"/);
    expect(() => imageEnv("FROM node\nENV A 1")).toThrow(/key=value/);
  });

  it("ENTRYPOINT and CMD serve /metrics from the compiled build and exit 0 on SIGTERM", async () => {
    expect(instruction("CMD")).toEqual(["--listen", "0.0.0.0:9464"]);
    const entry = instruction("ENTRYPOINT");
    expect(entry.at(-1)).toBe("dist/cli.js");
    // The build stage: `npm run build` (tsconfig.build.json) next to package.json.
    mkdirSync(IMAGE, { recursive: true });
    execFileSync(
      join(ROOT, "node_modules", ".bin", "tsc"),
      ["-p", join(ROOT, "tsconfig.build.json"), "--outDir", join(IMAGE, "dist")],
      { stdio: "inherit" },
    );
    copyFileSync(join(ROOT, "package.json"), join(IMAGE, "package.json"));

    const sim = await startSimulator({ sandboxes: 30 });
    // Loopback and an ephemeral port instead of the CMD's 0.0.0.0:9464, which may be taken here.
    const child = spawn(process.execPath, [...entry.slice(1), "--listen", "127.0.0.1:0"], {
      cwd: IMAGE,
      env: { PATH: process.env.PATH, ...imageEnv(dockerfile), SANDBOX_API_URL: sim.apiUrl },
    });
    const out = output(child);
    try {
      const text = await scrapeThenTerminate(child, out);
      expect(text).toMatch(/^sandbox_exporter_build_info\{/m);
    } finally {
      child.kill("SIGKILL");
      await sim.close();
    }
  }, 60_000);
});
