// E2B's lifecycle webhooks as a feature: on when webhooks.e2bSecretFile is set. POST /webhooks/e2b
// takes signed deliveries into the event ledger; the signing secret is scrubbed like a key and
// read again at each reload.
import { type Feature, type ListenerAccess, MissingServiceError } from "../feature.js";
import { normalizeLifecycleEvent } from "../platform/normalize/events.js";
import { inShard } from "../util/shard.js";
import { E2B_WEBHOOK_PATH, e2bWebhookRoute } from "./e2b-webhook.js";
import { WEBHOOK_FAMILIES } from "./e2b-webhook-families.js";

export const e2bWebhookFeature: Feature = {
  name: "e2b-webhook",
  declares: WEBHOOK_FAMILIES,
  prepare(config) {
    if (config.webhooks.e2bSecretFile === undefined) return undefined;
    return {
      // Deliveries go to the ledger: it exists with poll.events off too.
      needs: { ledger: true },
      start(s) {
        const log = s.logger.child({ component: "e2b-webhook" });
        const exempt = config.webhooks.e2bAuthExempt;
        const { index, total } = config.shard;
        // An empty secret verifies nothing: every delivery is refused (401) until one is set.
        const checked = (value: string | undefined): string => {
          if (!value) log.warn("no E2B webhook signing secret: every delivery is refused");
          return value ?? "";
        };
        let secret = checked(s.secretValues.e2bWebhookSecret);
        const sink = s.ledger;
        if (!sink) throw new MissingServiceError("e2b-webhook", "ledger");
        const warnIfLocked = (listener: ListenerAccess): void => {
          if (!listener.asksForCredentials || exempt) return;
          log.warn(
            { setting: "webhooks.e2bAuthExempt", path: E2B_WEBHOOK_PATH },
            "the listener asks for credentials E2B's deliveries cannot carry: every delivery is refused 401 (counted as unauthorized_listener); set webhooks.e2bAuthExempt",
          );
        };
        const route = e2bWebhookRoute({
          secret: () => secret,
          sink,
          ...(total > 1 ? { own: (id: string) => inShard(id, index, total) } : {}),
          parse: (raw) => normalizeLifecycleEvent(raw),
          limits: config.webhooks,
          horizon: () => sink.horizon(),
          clock: s.clock,
          registry: s.metrics.registry,
          namespace: config.metrics.namespace,
          logger: log,
          secrets: s.secrets,
          authExempt: exempt,
        });
        warnIfLocked(s.listener);
        return {
          routes: [route],
          reload(_next, ctx) {
            const value = checked(ctx.secret("e2bWebhookSecret"));
            warnIfLocked(ctx.listener);
            return () => {
              secret = value;
            };
          },
        };
      },
    };
  },
};
