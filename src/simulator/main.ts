// `npm run simulator`: run the fake platform standalone (demo, manual testing). Flags only, no env.
import { simulatorArgs, USAGE } from "./args.js";
import { banner } from "./banner.js";
import { startSimulator } from "./simulator.js";

async function main(): Promise<void> {
  const args = simulatorArgs(process.argv.slice(2));
  if (args.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const { options } = args;
  const sim = await startSimulator(options);
  process.stdout.write(banner(sim, options));
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
