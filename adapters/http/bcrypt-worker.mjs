// The bcrypt worker of chat-gateway/http, run by piscina off the main event loop. Plain JavaScript
// so that the same file loads from the TypeScript sources (tests, tsx) and from the built package.
import bcrypt from "bcryptjs";

/** @param {{password: string, hash: string}} task @returns {boolean} */
export default function compare({ password, hash }) {
  return bcrypt.compareSync(password, hash);
}
