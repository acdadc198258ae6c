import initSqlJs from "sql.js";
const SQL = await initSqlJs();
const db = new SQL.Database();
db.run(`CREATE VIRTUAL TABLE tok USING fts3tokenize(unicode61, "remove_diacritics=1")`);
for (const w of ["नमस्ते", "दुनिया", "שָׁלוֹם", "Zu\u0308rich", "Việt", "İstanbul", "Hello", "สวัสดีครับ", "OR", "日本語"]) {
  const r = db.exec('SELECT token, start, "end", position FROM tok WHERE input = ?', [w]);
  console.log(w, JSON.stringify(r[0]?.values ?? []));
}
