// Raw platform JSON -> domain types, accepting every common spelling (docs/architecture.md,
// "Tolerance rules"). The work lives in the other files of this folder and its state in a
// Normalizer; this module is the one entry point callers import.
export {
  type BuildStatusReason,
  normalizeBuildStatus,
  type TemplateBuildStatus,
} from "./build-status.js";
export { normalizeHealth, normalizeOverview, UNKNOWN_HEALTH } from "./cluster.js";
export { EMPTY_NUMBERS, EMPTY_STRINGS } from "./collect.js";
export { FIELD_NAMES, type FieldMap, SPELLINGS } from "./fields.js";
export { type InvalidCount, InvalidValues } from "./invalid-values.js";
export {
  type DeferredPage,
  deferList,
  type ListOptions,
  normalizeList,
} from "./list.js";
export { Normalizer } from "./normalizer.js";
export {
  normalizeLogEntry,
  normalizeNode,
  normalizeSandbox,
  normalizeSandboxIf,
  normalizeTemplate,
} from "./records.js";
export { normalizeUsageList, normalizeUsageMap } from "./usage.js";
export {
  NormalizeError,
  sanitizeLabelName,
  snakeCase,
  UntrackableRecordError,
} from "./values.js";
