// The image's Dockerfile as data: the bench runs the exporter with its flags, the tests check them.
import { readFileSync } from "node:fs";

/** The JSON-array form of a Dockerfile instruction (`ENTRYPOINT [...]`); undefined when absent. */
export function dockerInstruction(dockerfile: string, name: string): string[] | undefined {
  const line = dockerfile.split("\n").find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : (JSON.parse(line.slice(name.length + 1)) as string[]);
}

/** The node flags of the Dockerfile's `ENTRYPOINT ["node", ...flags, "dist/cli.js"]`. */
export function imageNodeFlags(dockerfile = readFileSync("Dockerfile", "utf8")): string[] {
  const argv = dockerInstruction(dockerfile, "ENTRYPOINT") ?? [];
  const end = argv.indexOf("dist/cli.js");
  if (argv[0] !== "node" || end < 1)
    throw new Error(`unexpected Dockerfile ENTRYPOINT: ${JSON.stringify(argv)}`);
  return argv.slice(1, end);
}

/** The environment the Dockerfile's final stage sets: its `ENV key=value ...` lines, in order. */
export function imageEnv(dockerfile = readFileSync("Dockerfile", "utf8")): Record<string, string> {
  const final = dockerfile.split(/^FROM /m).at(-1) ?? "";
  const env: Record<string, string> = {};
  for (const line of final.split("\n")) {
    if (!line.startsWith("ENV ")) continue;
    for (const pair of line.slice(4).trim().split(/\s+/)) {
      const eq = pair.indexOf("=");
      if (eq < 1 || /["'\\]/.test(pair))
        throw new Error(`unexpected Dockerfile ENV (key=value without quotes): ${line}`);
      env[pair.slice(0, eq)] = pair.slice(eq + 1);
    }
  }
  return env;
}
