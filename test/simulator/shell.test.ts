import { describe, expect, it } from "vitest";
import { runScript, type ShellOp } from "../../src/simulator/shell.js";

function exec(script: string, files = new Map<string, Buffer>(), env: Record<string, string> = {}) {
  const ops: ShellOp[] = [];
  const gen = runScript(script, { files, cwd: "/home/user", env });
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
});
