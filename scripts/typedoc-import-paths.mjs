// A TypeDoc plugin: the API reference names each module by the path users import it by
// (`chat-gateway/storage/memory`), not by its source folder (`adapters/storage/memory`).
// entrypoints.mjs is the one list of entries, so the names follow it.
import { Converter, ReflectionKind } from "typedoc";
import { entrypoints } from "../entrypoints.mjs";

/** The module name TypeDoc derives from a source entry: its path without `/index.ts`. */
function sourceName(source) {
  return source.replace(/\/index\.ts$/, "");
}

export function load(app) {
  const names = new Map(
    entrypoints.map((e) => [
      sourceName(e.source),
      e.subpath === "." ? "chat-gateway" : `chat-gateway/${e.subpath.slice(2)}`,
    ]),
  );
  app.converter.on(Converter.EVENT_RESOLVE_BEGIN, (context) => {
    for (const module of context.project.getReflectionsByKind(ReflectionKind.Module)) {
      const name = names.get(module.name);
      if (name) module.name = name;
    }
  });
}
