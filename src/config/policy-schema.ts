// Moved to src/policy/policy-settings.ts (the policy feature declares its own settings).
export * from "../policy/policy-settings.js";
