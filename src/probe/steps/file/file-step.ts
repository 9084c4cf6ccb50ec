// The file step: writes the nonce file (`filePath`) through the agent's /files and reads it back.

import { defineStep } from "../../step.js";
import { fileReadPhase } from "./file-read.js";
import { fileWritePhase } from "./file-write.js";

export const fileStep = defineStep({
  name: "file",
  description: "writes the nonce file at filePath and reads the same bytes back",
  phases: ["file_write", "file_read"],
  reasons: ["mismatch"],
  run: (ctx) =>
    ctx.phases([
      ["file_write", fileWritePhase],
      ["file_read", fileReadPhase],
    ]),
});
