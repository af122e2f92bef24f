-- The document-reader skill reads .docx and .xlsx too; its catalogue line says exactly what it reads.
UPDATE `skills` SET `description` = 'Reads text, CSV, HTML, PDF, Word (.docx) and Excel (.xlsx) files shared in a conversation.' WHERE `slug` = 'document-reader';
