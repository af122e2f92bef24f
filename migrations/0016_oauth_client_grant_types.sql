-- Every client receives a refresh token with its code, so every client's registered grant
-- types are both; clients registered (or read from a metadata document) before that was
-- recorded say `["authorization_code"]`.
UPDATE `oauth_clients` SET `grant_types` = '["authorization_code","refresh_token"]'
WHERE `grant_types` <> '["authorization_code","refresh_token"]';
