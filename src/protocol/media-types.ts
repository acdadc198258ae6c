/**
 * Media types (MIME) of uploads: the grammar an upload's `mime` must follow, and which types a
 * browser may show inline. Shared by the upload check and the HTTP media route.
 * @module
 */

/** Longest `mime` an upload may declare, characters (docs/PROTOCOL.md §7). */
export const MEDIA_TYPE_MAX_LENGTH = 255;

// RFC 6838 restricted-name for type and subtype; RFC 9110 token and quoted-string for parameters,
// with no control characters, so a stored type can never break out of a header line.
const NAME = "[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}";
const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+";
const QUOTED = '"(?:[\\x20\\x21\\x23-\\x5b\\x5d-\\x7e]|\\\\[\\x20-\\x7e])*"';
const MEDIA_TYPE = new RegExp(`^(${NAME}/${NAME})(?: ?; ?${TOKEN}=(?:${TOKEN}|${QUOTED}))*$`);

/**
 * The lower-cased `type/subtype` of a well-formed media type (parameters such as
 * `;codecs=opus` dropped), or undefined for anything else: over {@link MEDIA_TYPE_MAX_LENGTH},
 * control characters, a missing subtype, malformed parameters.
 */
export function mediaTypeEssence(mime: string): string | undefined {
  if (typeof mime !== "string" || mime.length > MEDIA_TYPE_MAX_LENGTH) return undefined;
  return MEDIA_TYPE.exec(mime)?.[1].toLowerCase();
}

/** Image types browsers only ever decode as pictures; SVG is missing on purpose (it runs scripts). */
const INLINE_IMAGES = new Set(["image/png", "image/jpeg", "image/gif", "image/webp", "image/avif"]);

/**
 * Whether a browser may show media of this essence (from {@link mediaTypeEssence}) inline:
 * raster images, audio and video. Everything else (SVG, HTML, XML, PDF, text, unknown types) is
 * served as a download, since a browser could run script in it on the server's origin.
 */
export function isInlineMediaType(essence: string): boolean {
  return INLINE_IMAGES.has(essence) || /^(audio|video)\//.test(essence);
}
