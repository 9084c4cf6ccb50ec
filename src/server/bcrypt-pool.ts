// bcrypt compares on worker threads: bcryptjs is plain JavaScript, tens of milliseconds a compare
// at cost 10, so on the main thread a flood of logins would hold up every scrape behind it.
import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";

/** The worker: one compare at a time, answered by id. CommonJS, given bcryptjs' resolved path. */
const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const bcrypt = require(workerData.bcryptjs);
parentPort.on("message", (m) => {
  let ok = false;
  try {
    ok = bcrypt.compareSync(m.password, m.hash);
  } catch {}
  parentPort.postMessage({ id: m.id, ok });
});
`;

interface Job {
  id: number;
  password: string;
  hash: string;
  resolve: (ok: boolean) => void;
  reject: (err: Error) => void;
}

interface Thread {
  worker: Worker;
  job: Job | undefined;
}

/** `size` worker threads comparing passwords with bcryptjs; started on first use, ended by close. */
export class BcryptPool {
  readonly #size: number;
  readonly #threads: Thread[] = [];
  readonly #queue: Job[] = [];
  #next = 0;
  #closed = false;
  #bcryptjs: string | undefined;

  constructor(size: number) {
    if (!(Number.isInteger(size) && size >= 1)) throw new RangeError(`bcrypt pool: size ${size}`);
    this.#size = size;
  }

  /** True when `password` matches the bcrypt `hash`; rejects once the pool is closed. */
  compare(password: string, hash: string): Promise<boolean> {
    if (this.#closed) return Promise.reject(new Error("bcrypt pool closed"));
    return new Promise((resolve, reject) => {
      this.#queue.push({ id: this.#next++, password, hash, resolve, reject });
      this.#dispatch();
    });
  }

  /** Ends the threads; compares not answered yet are rejected. */
  async close(): Promise<void> {
    this.#closed = true;
    const closed = new Error("bcrypt pool closed");
    for (const job of this.#queue.splice(0)) job.reject(closed);
    const threads = this.#threads.splice(0);
    for (const t of threads) t.job?.reject(closed);
    await Promise.all(threads.map((t) => t.worker.terminate()));
  }

  #dispatch(): void {
    while (this.#queue.length > 0) {
      let thread = this.#threads.find((t) => t.job === undefined);
      if (!thread && this.#threads.length < this.#size) thread = this.#spawn();
      if (!thread) return;
      const job = this.#queue.shift() as Job;
      thread.job = job;
      thread.worker.postMessage({ id: job.id, password: job.password, hash: job.hash });
    }
  }

  #spawn(): Thread {
    this.#bcryptjs ??= createRequire(import.meta.url).resolve("bcryptjs");
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { bcryptjs: this.#bcryptjs },
    });
    // An idle pool never keeps the process alive.
    worker.unref();
    const thread: Thread = { worker, job: undefined };
    worker.on("message", (m: { id: number; ok: boolean }) => {
      const job = thread.job;
      if (job?.id !== m.id) return;
      thread.job = undefined;
      job.resolve(m.ok);
      this.#dispatch();
    });
    const lost = (err: Error): void => {
      const i = this.#threads.indexOf(thread);
      if (i < 0) return;
      // A thread that died takes its compare with it; the next compare starts a new one.
      this.#threads.splice(i, 1);
      thread.job?.reject(err);
      thread.job = undefined;
      if (!this.#closed) this.#dispatch();
    };
    worker.on("error", lost);
    worker.on("exit", (code) => lost(new Error(`bcrypt worker exited with code ${code}`)));
    this.#threads.push(thread);
    return thread;
  }
}
