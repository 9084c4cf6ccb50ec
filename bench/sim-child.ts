// The simulated platform in its own process; the parent switches its stream faults over IPC.
// Arguments: sandbox count, then the list order ("id", the default, or "started").
import type { StreamFaults } from "../src/simulator/faults.js";
import { startSimulator } from "../src/simulator/index.js";
import { memoryMB, serveParent } from "./ipc.js";

const sandboxes = Number(process.argv[2] ?? 300);
const listOrder = process.argv[3] === "started" ? "started" : "id";
const sim = await startSimulator({ sandboxes, listOrder });
const template = sim.state.templates.find((t) => t.status === "ready")?.templateID ?? "";

serveParent(
  { apiUrl: sim.apiUrl, dataPort: sim.dataPort, domain: sim.domain, template },
  {
    streamFaults: (args) => {
      sim.faults.stream = { ...(args as StreamFaults) };
      return sim.faults.stream;
    },
    /** Latency on the pause and resume calls (0 clears it), for the lifecycle phases' timing. */
    lifecycleLatency: (args) => {
      const a = args as { pauseMs: number; resumeMs: number };
      sim.faults.route("POST /sandboxes/{id}/pause", { latencyMs: a.pauseMs });
      sim.faults.route("POST /sandboxes/{id}/resume", { latencyMs: a.resumeMs });
      return a;
    },
    memory: () => memoryMB(),
  },
  () => sim.close(),
);
