// A module of its own, with no import: the public entry re-exports it, and its declarations then
// stay clear of schema.ts's, which name sql.js's types (through the migrations' Sql).

/** Thrown when a data folder was written by a newer chat-gateway than the running one. */
export class SchemaTooNewError extends Error {
  constructor(
    readonly found: number,
    readonly supported: number,
  ) {
    super(
      `sql.js storage: the database has schema version ${found}, but this chat-gateway supports up to ${supported}. ` +
        `Upgrade chat-gateway, or point it at another data folder.`,
    );
    this.name = "SchemaTooNewError";
  }
}
