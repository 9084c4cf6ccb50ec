// The settings no single feature owns: the shard, the state names, the platform's field names
// and the log.
import { z } from "zod";
import { bool, int, list, oneOf, text } from "./fields.js";
import type { SectionOf } from "./slice.js";
import { defineSlice, ENV_PREFIX } from "./slice.js";

const X = ENV_PREFIX;

export const shardSlice = defineSlice({
  key: "shard",
  fields: {
    index: int(0).default(0),
    total: int(1).default(1),
    /** The index is the ordinal of the StatefulSet pod's hostname (`name-N`); see config/load.ts. */
    fromHostname: bool.default(false),
  },
  check(s, ctx) {
    if (s.index < s.total) return;
    ctx.addIssue({
      code: "custom",
      path: ["index"],
      message: `a shard index below shard.total (${s.total})`,
      input: s.index,
    });
  },
  settings: [
    {
      path: "shard.index",
      env: `${X}SHARD`,
      flag: "shard",
      kind: "int",
      help: "this replica's shard",
    },
    {
      path: "shard.total",
      env: `${X}TOTAL_SHARDS`,
      flag: "total-shards",
      kind: "int",
      help: "number of shards",
    },
    {
      path: "shard.fromHostname",
      env: `${X}SHARD_FROM_HOSTNAME`,
      flag: "shard-from-hostname",
      kind: "bool",
      help: "take this replica's shard from its StatefulSet pod's ordinal: the N of hostname name-N",
      doc: "take `shard.index` from the StatefulSet pod's ordinal: the `N` of the hostname `name-N` (`HOSTNAME`, else the machine's name); refused with an explicit `shard.index`, or a hostname without an ordinal",
    },
  ],
});

/** Our field name -> the platform's JSON key, per resource. */
const fieldNames = z.record(text, text, { error: "a mapping of our field name to the platform's" });

export const fieldMapSlice = defineSlice({
  key: "fieldMap",
  fields: {
    sandbox: fieldNames.optional(),
    node: fieldNames.optional(),
    template: fieldNames.optional(),
    log: fieldNames.optional(),
    list: fieldNames.optional(),
  },
  settings: [],
});

/** The state names that read as running and as paused when `states` says nothing. */
export const DEFAULT_STATES: {
  readonly running: readonly string[];
  readonly paused: readonly string[];
} = { running: ["running", "active"], paused: ["paused", "suspended"] };

export const statesSlice = defineSlice({
  key: "states",
  fields: {
    running: list.default(() => [...DEFAULT_STATES.running]),
    paused: list.default(() => [...DEFAULT_STATES.paused]),
  },
  settings: [],
});

export const logSlice = defineSlice({
  key: "log",
  fields: {
    level: oneOf(["trace", "debug", "info", "warn", "error", "fatal", "silent"]).default("info"),
    format: oneOf(["json", "pretty"]).default("json"),
  },
  settings: [
    {
      path: "log.level",
      env: `${X}LOG_LEVEL`,
      flag: "log-level",
      kind: "string",
      help: "trace, debug, info, warn, error, fatal or silent",
    },
    {
      path: "log.format",
      env: `${X}LOG_FORMAT`,
      flag: "log-format",
      kind: "string",
      help: "json or pretty",
    },
  ],
});

declare module "./settings.js" {
  interface Settings {
    shard: SectionOf<typeof shardSlice>;
    fieldMap: SectionOf<typeof fieldMapSlice>;
    states: SectionOf<typeof statesSlice>;
    log: SectionOf<typeof logSlice>;
  }
}
