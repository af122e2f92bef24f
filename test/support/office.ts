/**
 * Minimal Office Open XML files built in the test (zips of the few XML parts a reader needs),
 * rather than checked in as opaque blobs.
 */
import { strToU8, zipSync } from "fflate";

const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
const W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"';
const CONTENT_TYPES = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="xml" ContentType="application/xml"/></Types>`;

/** A paragraph (a tab written \t), or a table of one-paragraph cells. */
export type DocxBlock = string | { table: string[][] };

const paragraph = (text: string) =>
  `<w:p><w:pPr><w:pStyle w:val="Normal"/></w:pPr>${text
    .split("\t")
    .map((part) => `<w:r><w:rPr><w:b/></w:rPr><w:t xml:space="preserve">${esc(part)}</w:t></w:r>`)
    .join("<w:r><w:tab/></w:r>")}</w:p>`;

/** A .docx whose body holds these paragraphs and tables (cells of one paragraph each). */
export function makeDocx(blocks: DocxBlock[], documentXml?: string): Uint8Array {
  const body = blocks
    .map((b) =>
      typeof b === "string"
        ? paragraph(b)
        : `<w:tbl>${b.table.map((row) => `<w:tr>${row.map((c) => `<w:tc>${paragraph(c)}</w:tc>`).join("")}</w:tr>`).join("")}</w:tbl>`,
    )
    .join("");
  const document =
    documentXml ??
    `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<w:document ${W}><w:body>${body}<w:sectPr/></w:body></w:document>`;
  return zipSync({
    "[Content_Types].xml": strToU8(CONTENT_TYPES),
    "word/document.xml": strToU8(document),
  });
}

export type Cell = string | number | boolean | null;

/**
 * A .xlsx with these sheets. Strings go to the shared-strings part, except those starting with
 * "inline:" (an inline string); null leaves the cell out, so the next cell's reference skips it.
 */
export function makeXlsx(sheets: { name: string; rows: Cell[][] }[]): Uint8Array {
  const shared: string[] = [];
  const col = (i: number) => String.fromCharCode(65 + i);
  const cell = (value: Cell, ref: string) => {
    if (value === null) return "";
    if (typeof value === "number") return `<c r="${ref}" s="1"><v>${value}</v></c>`;
    if (typeof value === "boolean") return `<c r="${ref}" t="b"><v>${value ? 1 : 0}</v></c>`;
    if (value.startsWith("inline:")) return `<c r="${ref}" t="inlineStr"><is><t>${esc(value.slice(7))}</t></is></c>`;
    shared.push(value);
    return `<c r="${ref}" t="s"><v>${shared.length - 1}</v></c>`;
  };
  const files: Record<string, Uint8Array> = { "[Content_Types].xml": strToU8(CONTENT_TYPES) };
  sheets.forEach((sheet, s) => {
    const rows = sheet.rows
      .map((r, i) => `<row r="${i + 1}">${r.map((v, j) => cell(v, `${col(j)}${i + 1}`)).join("")}</row>`)
      .join("");
    files[`xl/worksheets/sheet${s + 1}.xml`] = strToU8(
      `<?xml version="1.0" encoding="UTF-8"?>\n<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>${rows}</sheetData></worksheet>`,
    );
  });
  files["xl/workbook.xml"] = strToU8(
    `<?xml version="1.0" encoding="UTF-8"?>\n<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets>${sheets
      .map((sheet, s) => `<sheet name="${esc(sheet.name)}" sheetId="${s + 1}" r:id="rId${s + 1}"/>`)
      .join("")}</sheets></workbook>`,
  );
  files["xl/_rels/workbook.xml.rels"] = strToU8(
    `<?xml version="1.0" encoding="UTF-8"?>\n<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">${sheets
      .map(
        (_, s) =>
          `<Relationship Id="rId${s + 1}" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet${s + 1}.xml"/>`,
      )
      .join("")}</Relationships>`,
  );
  // Rich text in one shared string, and a phonetic guide that is not part of the text.
  files["xl/sharedStrings.xml"] = strToU8(
    `<?xml version="1.0" encoding="UTF-8"?>\n<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" count="${shared.length}" uniqueCount="${shared.length}">${shared
      .map((s) =>
        s.includes("|")
          ? `<si>${s
              .split("|")
              .map((part) => `<r><rPr><b/></rPr><t xml:space="preserve">${esc(part)}</t></r>`)
              .join("")}<rPh sb="0" eb="1"><t>ふりがな</t></rPh></si>`
          : `<si><t>${esc(s)}</t></si>`,
      )
      .join("")}</sst>`,
  );
  return zipSync(files);
}
