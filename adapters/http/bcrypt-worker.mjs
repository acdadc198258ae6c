// The bcrypt worker of the password verifier (bcrypt-pool.ts), off the main event loop: one check
// at a time, answered in order. Plain JavaScript so that the same file loads from the TypeScript
// sources (tests, tsx) and from the built package.
import { parentPort } from "node:worker_threads";
import bcrypt from "bcryptjs";

parentPort.on("message", ({ password, hash }) => {
  try {
    parentPort.postMessage({ matched: bcrypt.compareSync(password, hash) });
  } catch (error) {
    parentPort.postMessage({ error: String(error?.message ?? error) });
  }
});
