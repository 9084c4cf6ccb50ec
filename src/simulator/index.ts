// Public surface of the simulator for tests, benchmarks and the demo.

export { Churn, type FleetChurn } from "./churn.js";
export type { SimFlavor } from "./context.js";
export { SimCounters } from "./counters.js";
export { RUNNING_COUNTS_PATH } from "./e2b-routes.js";
export {
  CURRENT_ENVD_VERSION,
  compareVersions,
  ENVD_VERSION_MIX,
  type EnvdRules,
  envdRules,
} from "./envd.js";
export { SimulatorError } from "./errors.js";
export { DEFAULT_TEAM_ID, type SimEvent, SimEventLog } from "./events.js";
export {
  type FaultDecision,
  type LifecycleFaults,
  type RouteFault,
  SimFaults,
  type StreamFaults,
} from "./faults.js";
export { API_PREFIX } from "./management-server.js";
export {
  type GroundTruthRow,
  type SandboxInit,
  type SimLogEntry,
  type SimNode,
  type SimProcess,
  SimSandbox,
  type SimTemplate,
} from "./model.js";
export {
  dataPlaneFlags,
  ENVD_PORT,
  type Simulator,
  type SimulatorOptions,
  type SimulatorTeam,
  startSimulator,
} from "./simulator.js";
export {
  DEFAULT_TEAM_SLUG,
  type SimSnapshot,
  type SimSnapshotBuild,
  type SnapshotSeed,
  SnapshotStore,
} from "./snapshot-store.js";
export { type SimLifecycleEvent, SimState } from "./state.js";
export { derivedAdminToken, derivedTeams, type SimTeamOptions } from "./teams.js";
export { type SimWebhook, SimWebhooks, type WebhookAttempt, webhookSignature } from "./webhooks.js";
