import { ExporterError } from "../util/errors.js";

/** Misuse of the simulator's test API (unknown id, bad option). */
export class SimulatorError extends ExporterError {
  constructor(message: string) {
    super("ERR_SIMULATOR", message);
  }
}
