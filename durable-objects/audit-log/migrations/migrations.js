import journal from './meta/_journal.json';
import m0000 from './0000_events.sql';
import m0001 from './0001_outbox_id.sql';
import m0002 from './0002_merkle_tree.sql';
import m0003 from './0003_witnesses.sql';

  export default {
    journal,
    migrations: {
      m0000,
m0001,
m0002,
m0003
    }
  }
  