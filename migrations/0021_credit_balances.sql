-- Each workspace's balance, kept with its ledger: a credit check (every paid action, every turn)
-- reads one row instead of summing every ledger row the workspace has. The triggers keep it in
-- the statement that writes the ledger, whoever writes it (an INSERT … ON CONFLICT DO NOTHING
-- that inserts nothing fires none).
CREATE TABLE `credit_balances` (
	`workspace_id` text PRIMARY KEY NOT NULL,
	`balance` integer NOT NULL,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
INSERT INTO `credit_balances` (`workspace_id`, `balance`)
	SELECT `workspace_id`, SUM(`amount`) FROM `credit_ledger` GROUP BY `workspace_id`;
--> statement-breakpoint
CREATE TRIGGER `credit_ledger_balance_insert` AFTER INSERT ON `credit_ledger` BEGIN
	INSERT INTO `credit_balances` (`workspace_id`, `balance`) VALUES (NEW.`workspace_id`, NEW.`amount`)
		ON CONFLICT (`workspace_id`) DO UPDATE SET `balance` = `balance` + excluded.`balance`;
END;
--> statement-breakpoint
CREATE TRIGGER `credit_ledger_balance_delete` AFTER DELETE ON `credit_ledger` BEGIN
	UPDATE `credit_balances` SET `balance` = `balance` - OLD.`amount` WHERE `workspace_id` = OLD.`workspace_id`;
END;
--> statement-breakpoint
CREATE TRIGGER `credit_ledger_balance_update` AFTER UPDATE OF `workspace_id`, `amount` ON `credit_ledger` BEGIN
	UPDATE `credit_balances` SET `balance` = `balance` - OLD.`amount` WHERE `workspace_id` = OLD.`workspace_id`;
	INSERT INTO `credit_balances` (`workspace_id`, `balance`) VALUES (NEW.`workspace_id`, NEW.`amount`)
		ON CONFLICT (`workspace_id`) DO UPDATE SET `balance` = `balance` + excluded.`balance`;
END;
