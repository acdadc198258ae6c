/**
 * The order of `channel.list` (docs/PROTOCOL.md §3), for the gateway that sends it and a client
 * that keeps its list sorted as channels change.
 * @module
 */

/** The fields of a channel the order reads. */
export interface OrderedChannel {
  chat_id: string;
  name: string;
  favorite?: boolean;
}

/** Favorites first, then by name ignoring case, then by `chat_id`: an `Array.prototype.sort` comparator. */
export function compareChannels(a: OrderedChannel, b: OrderedChannel): number {
  const fav = Number(Boolean(b.favorite)) - Number(Boolean(a.favorite));
  if (fav !== 0) return fav;
  // A fixed locale: every client and the gateway sort alike whatever the machine's locale.
  const an = a.name.toLocaleLowerCase("en");
  const bn = b.name.toLocaleLowerCase("en");
  if (an !== bn) return an < bn ? -1 : 1;
  return a.chat_id < b.chat_id ? -1 : a.chat_id > b.chat_id ? 1 : 0;
}
