import { describe, expect, it } from "vitest";
import type { SimProcess } from "../../src/simulator/index.js";
import { runScript, type ShellJobs, type ShellOp } from "../../src/simulator/shell.js";

function exec(
  script: string,
  files = new Map<string, Buffer>(),
  env: Record<string, string> = {},
  jobs?: ShellJobs,
) {
  const ops: ShellOp[] = [];
  const gen = runScript(script, { files, cwd: "/home/user", env, ...(jobs && { jobs }) });
  let step = gen.next();
  for (let i = 0; !step.done && i < 1000; i++) {
    ops.push(step.value);
    step = gen.next();
  }
  const text = (kind: "stdout" | "stderr") =>
    Buffer.concat(ops.flatMap((o) => (o.kind === kind ? [o.data] : []))).toString();
  return { code: step.value, stdout: text("stdout"), stderr: text("stderr"), ops, files };
}

describe("simulator shell", () => {
  it("echoes words with quotes, escapes and -n", () => {
    expect(exec(`echo 'a  b' "c \\"d\\"" e\\ f`).stdout).toBe('a  b c "d" e f\n');
    expect(exec("echo -n hi").stdout).toBe("hi");
  });

  it("expands environment variables outside single quotes", () => {
    expect(exec(`echo $NAME "\${NAME}!" '$NAME'`, undefined, { NAME: "x" }).stdout).toBe(
      "x x! $NAME\n",
    );
  });

  it("honours ; && and || by the previous exit code", () => {
    expect(exec("false && echo no; echo yes").stdout).toBe("yes\n");
    expect(exec("false || echo fallback").stdout).toBe("fallback\n");
    expect(exec("true && echo a || echo b").stdout).toBe("a\n");
  });

  it("truncates with > and appends with >>, relative to the working directory", () => {
    const r = exec("echo one > f; echo two >> f; echo three >> f; cat f");
    expect(r.stdout).toBe("one\ntwo\nthree\n");
    expect(r.files.get("/home/user/f")!.toString()).toBe("one\ntwo\nthree\n");
    expect(exec("echo gone > /dev/null").stdout).toBe("");
  });

  it("stops at exit with its code", () => {
    const r = exec("echo a; exit 4; echo b");
    expect(r).toMatchObject({ code: 4, stdout: "a\n" });
  });

  it("yields a sleep for the caller to wait out", () => {
    expect(exec("sleep 0.25").ops).toEqual([{ kind: "sleep", ms: 250 }]);
  });

  it("reports unknown commands, missing files and syntax errors like bash", () => {
    expect(exec("nope")).toMatchObject({ code: 127, stderr: "bash: nope: command not found\n" });
    expect(exec("cat /missing")).toMatchObject({
      code: 1,
      stderr: "cat: /missing: No such file or directory\n",
    });
    expect(exec("echo 'open").code).toBe(2);
    expect(exec("echo a | wc").code).toBe(2);
  });

  it("sends stderr where 2>&1 finds stdout, and a file to both with &>", () => {
    const r = exec("cat /nope > out 2>&1; cat /gone &> both; cat /x 2>&1 > f");
    expect(r.files.get("/home/user/out")!.toString()).toBe(
      "cat: /nope: No such file or directory\n",
    );
    expect(r.files.get("/home/user/both")!.toString()).toBe(
      "cat: /gone: No such file or directory\n",
    );
    // Order matters, as in bash: stderr went to the stdout stream before stdout moved to f.
    expect(r.stdout).toBe("cat: /x: No such file or directory\n");
    expect(r.files.get("/home/user/f")!.toString()).toBe("");
    expect(exec("cat /nope 2> /dev/null").stderr).toBe("");
  });

  it("reads stdin from a file with <, and refuses a missing one", () => {
    const files = new Map([["/home/user/in", Buffer.from("from a file\n")]]);
    expect(exec("cat < in", files).stdout).toBe("from a file\n");
    expect(exec("cat < /dev/null").stdout).toBe("");
    expect(exec("cat < missing; echo next")).toMatchObject({
      stdout: "next\n",
      stderr: "bash: missing: No such file or directory\n",
    });
  });
});

describe("simulator shell jobs", () => {
  function jobs(now = { t: 0 }): ShellJobs & { now: () => number; t: { t: number } } {
    let pid = 500;
    return {
      table: new Map<number, SimProcess>(),
      nextPid: () => pid++,
      now: () => now.t,
      t: now,
    };
  }

  it("starts a background sleep, prints its pid with $!, and does not wait for it", () => {
    const j = jobs();
    const r = exec("sleep 600 >/dev/null 2>&1 </dev/null & echo $!", undefined, {}, j);
    expect(r).toMatchObject({ code: 0, stdout: "500\n", stderr: "" });
    expect(r.ops.some((o) => o.kind === "sleep")).toBe(false);
    expect(j.table.get(500)).toEqual({
      pid: 500,
      command: "sleep 600",
      startedAt: 0,
      endsAt: 600_000,
    });
  });

  it("checks a process with kill -0 until it ends, and ends it with kill", () => {
    const j = jobs();
    exec("sleep 10 > /dev/null 2>&1 &", undefined, {}, j);
    expect(exec("kill -0 500", undefined, {}, j).code).toBe(0);
    j.t.t = 10_000;
    expect(exec("kill -0 500", undefined, {}, j)).toMatchObject({
      code: 1,
      stderr: "bash: kill: (500) - No such process\n",
    });
    exec("sleep 60 &> /dev/null & kill $!; kill -0 $! || echo gone", undefined, {}, j);
    expect(exec("kill -0 501", undefined, {}, j).code).toBe(1);
    expect(exec("kill -0 x", undefined, {}, j)).toMatchObject({ code: 1 });
    expect(exec("kill", undefined, {}, j).code).toBe(2);
  });

  it("keeps the streams open while a background job still writes to them", () => {
    // On envd a child holding stdout holds the Start stream: the script ends when the job does.
    expect(exec("sleep 2 & echo $!").ops).toEqual([
      { kind: "stdout", data: Buffer.from("1000\n") },
      { kind: "sleep", ms: 2000 },
    ]);
    expect(exec("sleep 2 > /dev/null & echo $!").ops.at(-1)).toEqual({ kind: "sleep", ms: 2000 });
    expect(exec("sleep 2 > /dev/null 2>&1 & echo $!").ops.at(-1)!.kind).toBe("stdout");
  });

  it("runs any other background command at once, with exit code 0, and leaves $! empty before a job", () => {
    const r = exec("echo $!; false & echo bg > f &", undefined, {}, jobs());
    expect(r).toMatchObject({ code: 0, stdout: "\n" });
    expect(r.files.get("/home/user/f")!.toString()).toBe("bg\n");
    expect(exec("& echo x").code).toBe(2);
  });
});

describe("simulator shell builtins: a working directory and variables per process", () => {
  const HOME = { HOME: "/home/user" };

  it("changes directory with cd for the rest of the command line, as pwd and $PWD show", () => {
    expect(exec("cd /tmp && pwd; echo $PWD $OLDPWD").stdout).toBe("/tmp\n/tmp /home/user\n");
    expect(exec("cd .. && pwd").stdout).toBe("/home\n");
    expect(exec("cd /tmp; cd; pwd", undefined, HOME).stdout).toBe("/home/user\n");
    expect(exec("cd / && cd ~ && pwd; echo ~ '~'", undefined, HOME).stdout).toBe(
      "/home/user\n/home/user ~\n",
    );
    // An unquoted empty expansion is no word at all: `cd $UNSET` is `cd`.
    expect(exec("cd /tmp && cd $UNSET && pwd", undefined, HOME).stdout).toBe("/home/user\n");
  });

  it("goes back with cd -, printing where it went, and needs an OLDPWD for it", () => {
    expect(exec("cd /tmp && cd - ")).toMatchObject({ code: 0, stdout: "/home/user\n" });
    expect(exec("cd /tmp && cd - >/dev/null && cd - && pwd").stdout).toBe("/tmp\n/tmp\n");
    expect(exec("cd -")).toMatchObject({ code: 1, stderr: "bash: cd: OLDPWD not set\n" });
  });

  it("refuses a missing directory, a file, and two operands like bash, and stops an && chain", () => {
    const files = new Map([["/srv/app/main.py", Buffer.from("")]]);
    expect(exec("cd /nope && echo no", files)).toMatchObject({
      code: 1,
      stdout: "",
      stderr: "bash: cd: /nope: No such file or directory\n",
    });
    expect(exec("cd /srv/app/main.py", files)).toMatchObject({
      code: 1,
      stderr: "bash: cd: /srv/app/main.py: Not a directory\n",
    });
    // A directory holds files written under it, as the files API creates the parents.
    expect(exec("cd /srv/app && cat main.py && pwd", files).stdout).toBe("/srv/app\n");
    expect(exec("cd /a /b").stderr).toBe("bash: cd: too many arguments\n");
    expect(exec("cd", undefined, {})).toMatchObject({
      code: 1,
      stderr: "bash: cd: HOME not set\n",
    });
  });

  it("keeps the directory per process: the next script starts where its process was told", () => {
    const files = new Map<string, Buffer>();
    expect(exec("cd /tmp && echo hi > f && cat f", files).stdout).toBe("hi\n");
    expect(files.get("/tmp/f")?.toString()).toBe("hi\n");
    expect(exec("pwd", files).stdout).toBe("/home/user\n");
    // Redirections are opened before the command runs, in the directory it runs from.
    exec("cd /tmp > out", files);
    expect(files.has("/home/user/out")).toBe(true);
    // A background job is a subshell: its cd stays in it.
    expect(exec("cd /tmp & pwd").stdout).toBe("/home/user\n");
  });

  it("serves `python -m http.server` from the directory cd went to", () => {
    const table = new Map<number, SimProcess>();
    let pid = 700;
    const j: ShellJobs = { table, nextPid: () => pid++, now: () => 0 };
    exec("cd /tmp && python -m http.server 8000 > /dev/null 2>&1 &", undefined, {}, j);
    expect(table.get(700)?.serves).toEqual({ port: 8000, dir: "/tmp" });
    const fg = exec("cd /var && python3 -m http.server 8001", undefined, {}, j);
    expect(fg.ops).toEqual([{ kind: "sleep", ms: 24 * 3_600_000 }]);
    expect(table.get(701)?.serves).toEqual({ port: 8001, dir: "/var" });
  });

  it("expands each command's words when it runs: export X=1 && echo $X, $?", () => {
    expect(exec("export X=1 && echo $X").stdout).toBe("1\n");
    expect(exec('X=two; echo "$X"; false; echo $?').stdout).toBe("two\n1\n");
    // NAME=value before a command is that command's alone, and its words were expanded before.
    expect(exec('X=1 echo $X; echo "[$X]"').stdout).toBe("\n[]\n");
  });

  it("lists the exported variables with env and export, and not the shell's own", () => {
    const env = exec("export A=1; B=2; C=3 env; echo [$C]", undefined, { HOME: "/h" }).stdout;
    expect(env).toBe("HOME=/h\nPWD=/home/user\nA=1\nC=3\n[]\n");
    expect(exec("env D=4 env", undefined, {}).stdout).toBe("PWD=/home/user\nD=4\n");
    expect(exec("B=2; export B; export", undefined, {}).stdout).toBe(
      'declare -x B="2"\ndeclare -x PWD="/home/user"\n',
    );
    expect(exec("export 1x=2")).toMatchObject({
      code: 1,
      stderr: "bash: export: `1x=2': not a valid identifier\n",
    });
    expect(exec("export X=1; unset X; echo [$X]; env", undefined, {}).stdout).toBe(
      "[]\nPWD=/home/user\n",
    );
  });
});
