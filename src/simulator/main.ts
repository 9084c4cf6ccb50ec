// `npm run simulator`: run the fake platform standalone (demo, manual testing). Flags only, no env.
import { simulatorArgs, USAGE } from "./args.js";
import { startSimulator } from "./simulator.js";

async function main(): Promise<void> {
  const args = simulatorArgs(process.argv.slice(2));
  if (args.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const { options } = args;
  const sim = await startSimulator(options);
  const e2b = options.flavor === "e2b";
  process.stdout.write(
    [
      `management API  ${sim.managementUrl}  (base_url ${sim.apiUrl}${e2b ? ", E2B's API" : ""})`,
      `data plane      ${sim.dataUrl}  (Host: <port>-<sandboxId>.${sim.domain})`,
      `sandboxes       ${sim.state.sandboxes.size}${options.apiKey ? "  (API key required)" : ""}`,
      ...(e2b
        ? [
            `timeouts        ${options.expireSandboxes ? "enforced: killed, or paused with auto-pause (--no-expiry: kept)" : "not enforced (--no-expiry)"}`,
          ]
        : []),
      "",
    ].join("\n"),
  );
  const stop = () => {
    sim.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
}

main().catch((err: unknown) => {
  process.stderr.write(
    `simulator: ${err instanceof Error ? err.message : String(err)}\n${USAGE}\n`,
  );
  process.exit(2);
});
