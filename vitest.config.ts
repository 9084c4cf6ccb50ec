import { defineConfig } from "vitest/config";

/** Suites that start whole exporters, Prometheus, the demo or child processes: minutes, not seconds. */
const SLOW = [
  "test/chaos/**",
  "test/deploy/**",
  "test/e2e/**",
  "test/promtool/**",
  "test/sdk/**",
  "test/cli.test.ts",
  "test/util/deadline-gc.test.ts",
];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: "forks",
    // `npm test` runs both projects; `npm run test:unit` the first alone.
    projects: [
      // No module isolation between unit files: library code keeps no module-level state (a house
      // rule), and importing the tree once per worker instead of once per file cuts the lane by half.
      {
        extends: true,
        test: { name: "unit", include: ["test/**/*.test.ts"], exclude: SLOW, isolate: false },
      },
      { extends: true, test: { name: "integration", include: SLOW.map(slowGlob) } },
    ],
  },
});

/** A glob of SLOW as an include pattern (folders as their test files). */
function slowGlob(glob: string): string {
  return glob.endsWith("/**") ? `${glob}/*.test.ts` : glob;
}
