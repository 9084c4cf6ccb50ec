// E2B's own JavaScript SDK (npm `e2b`, pinned 2.51.0) runs the commands its users write through the
// simulator's shell: `cd`, `cd -`, `export`, `env`, `$HOME`, `pwd`, with a working directory per
// process (the SDK's `cwd` option is where it starts), and `cd /home/user && python -m
// http.server 8000` in the background, reached on its port as E2B's proxy serves it.
import { CommandExitError, Sandbox } from "e2b";
import { type Agent, fetch } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CURRENT_ENVD_VERSION, type Simulator } from "../../src/simulator/index.js";
import { dataPlaneDialer, sdkOpts, startSdkSimulator, templateOn } from "./sdk-setup.js";

describe("E2B SDK 2.51: shell builtins and a working directory per process", () => {
  let sim: Simulator;
  let dialer: Agent;
  let sandbox: Sandbox;

  beforeAll(async () => {
    ({ sim } = await startSdkSimulator());
    dialer = dataPlaneDialer(sim);
    sandbox = await Sandbox.create(templateOn(sim, CURRENT_ENVD_VERSION), sdkOpts(sim));
  });
  afterAll(async () => {
    await sandbox?.kill();
    await dialer.close();
    await sim.close();
  });

  const run = (cmd: string, opts: { cwd?: string; envs?: Record<string, string> } = {}) =>
    sandbox.commands.run(cmd, opts);

  it("runs cd /home/user && pwd, and starts each command in its own cwd", async () => {
    expect((await run("cd /home/user && pwd")).stdout).toBe("/home/user\n");
    expect((await run("cd /tmp && pwd")).stdout).toBe("/tmp\n");
    // The cd lasted to the end of that command line: the next process starts at home again.
    expect((await run("pwd")).stdout).toBe("/home/user\n");
    expect((await run("pwd; cd .. && pwd", { cwd: "/tmp" })).stdout).toBe("/tmp\n/\n");
    expect((await run("echo $HOME && cd /tmp && cd && pwd")).stdout).toBe(
      "/home/user\n/home/user\n",
    );
  });

  it("goes back with cd -, printing the directory, as bash does", async () => {
    const r = await run("cd /tmp && cd - ");
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toBe("/home/user\n");
  });

  it("fails a cd to a missing directory with bash's message and exit 1", async () => {
    const failed = await run("cd /nowhere && echo unreachable").catch((err: unknown) => err);
    expect(failed).toBeInstanceOf(CommandExitError);
    expect((failed as CommandExitError).exitCode).toBe(1);
    expect((failed as CommandExitError).stderr).toBe(
      "bash: cd: /nowhere: No such file or directory\n",
    );
  });

  it("exports a variable for the rest of the line, and lists it with env", async () => {
    expect((await run("export X=1 && echo $X")).stdout).toBe("1\n");
    expect((await run("echo [$X]")).stdout).toBe("[]\n");
    const env = (await run("export GREETING=hi; env", { envs: { FROM_SDK: "yes" } })).stdout;
    expect(env.split("\n")).toEqual(
      expect.arrayContaining(["GREETING=hi", "FROM_SDK=yes", "HOME=/home/user", "PWD=/home/user"]),
    );
  });

  it("serves `cd /home/user && python -m http.server 8000` started in the background", async () => {
    await sandbox.files.write("/home/user/hello.txt", "hello from home\n");
    const cmd = await sandbox.commands.run("cd /home/user && python -m http.server 8000", {
      background: true,
    });
    expect(cmd.pid).toBeGreaterThan(0);
    const res = await fetch(`http://${sandbox.getHost(8000)}/hello.txt`, { dispatcher: dialer });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("hello from home\n");
  });

  it("serves the directory cd went to, not the home the process started in", async () => {
    await sandbox.files.write("/tmp/site/index.html", "from tmp\n");
    await sandbox.commands.run("cd /tmp/site && python3 -m http.server 8001", { background: true });
    const res = await fetch(`http://${sandbox.getHost(8001)}/`, { dispatcher: dialer });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("from tmp\n");
  });
});
