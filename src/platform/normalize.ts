// Raw platform JSON -> domain types, accepting every common spelling (DESIGN.md "Tolerating the
// unknown"). The work lives in normalize-*.ts and its state in a Normalizer; this module is the
// one entry point callers import.
export { normalizeHealth, normalizeOverview, UNKNOWN_HEALTH } from "./normalize-cluster.js";
export { EMPTY_NUMBERS, EMPTY_STRINGS } from "./normalize-collect.js";
export { FIELD_NAMES, type FieldMap, SPELLINGS } from "./normalize-fields.js";
export {
  type DeferredPage,
  deferList,
  type ListOptions,
  normalizeList,
} from "./normalize-list.js";
export {
  normalizeLogEntry,
  normalizeNode,
  normalizeSandbox,
  normalizeTemplate,
} from "./normalize-records.js";
export {
  NormalizeError,
  parseIsoTime,
  sanitizeLabelName,
  snakeCase,
} from "./normalize-values.js";
export { Normalizer } from "./normalizer.js";
