//! Where transactions start and end: the native twin of binlake/read/scan.py
//! `TransactionState` (the reference; one definition per language).
//!
//! `open`: some event since the last boundary still needs its sequel.
//! `explicit`: inside BEGIN ... COMMIT/XID (or a MariaDB GTID group), where
//! only the end of the transaction closes; outside, a statement closes with
//! its last event (a QUERY, or a rows event flagged STMT_END_F).

use crate::constants::*;
use crate::events::{is_rows_event, QueryKind};

fn is_gtid(code: u8) -> bool {
    matches!(
        code,
        GTID_LOG_EVENT | ANONYMOUS_GTID_LOG_EVENT | GTID_TAGGED_LOG_EVENT
    )
}

/// QUERY events of every kind (`QUERY_EVENTS`).
pub fn is_query(code: u8) -> bool {
    matches!(
        code,
        QUERY_EVENT | QUERY_COMPRESSED_EVENT | EXECUTE_LOAD_QUERY_EVENT
    )
}

/// Events that belong to the statement that follows them (`STATEMENT_PARTS`).
fn is_statement_part(code: u8) -> bool {
    matches!(
        code,
        TABLE_MAP_EVENT
            | ROWS_QUERY_LOG_EVENT
            | ANNOTATE_ROWS_EVENT
            | INTVAR_EVENT
            | RAND_EVENT
            | USER_VAR_EVENT
            | BEGIN_LOAD_QUERY_EVENT
            | APPEND_BLOCK_EVENT
            | CREATE_FILE_EVENT
    )
}

/// Statements complete in one event: old LOAD DATA generations (`STATEMENT_ENDS`).
fn is_statement_end(code: u8) -> bool {
    matches!(
        code,
        LOAD_EVENT | NEW_LOAD_EVENT | EXEC_LOAD_EVENT | DELETE_FILE_EVENT
    )
}

/// What a step needs besides the type code: facts of a *decoded* event (an
/// event that failed to decode under `force` gives none).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StepDetails {
    pub query_kind: Option<QueryKind>,
    pub stmt_end: bool,
    pub standalone: bool,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TransactionState {
    pub open: bool,
    pub explicit: bool,
}

impl TransactionState {
    /// Whether this event begins a transaction even though one is open: a
    /// GTID, or a BEGIN inside BEGIN, means the open one never ended
    /// (crash-recovery leftovers).
    pub fn starts(&self, code: u8, query_kind: Option<QueryKind>) -> bool {
        is_gtid(code)
            || code == GTID_EVENT
            || (query_kind == Some(QueryKind::Begin) && self.explicit)
    }

    pub fn step(&mut self, code: u8, details: StepDetails) {
        if is_rows_event(code) {
            self.open = self.explicit || !details.stmt_end;
        } else if is_statement_part(code) {
            self.open = true;
        } else if is_query(code) {
            if details.query_kind == Some(QueryKind::Begin) {
                self.open = true;
                self.explicit = true;
            } else if details.query_kind == Some(QueryKind::End) || !self.explicit {
                self.open = false;
                self.explicit = false;
            }
        } else if code == XID_EVENT || code == XA_PREPARE_LOG_EVENT {
            self.open = false;
            self.explicit = false;
        } else if is_gtid(code) {
            self.open = true;
            self.explicit = false;
        } else if code == GTID_EVENT {
            // MariaDB: the GTID event stands for BEGIN
            self.open = true;
            self.explicit = !details.standalone;
        } else if code == TRANSACTION_PAYLOAD_EVENT {
            // holds the rest of the transaction (BEGIN ... XID) compressed
            self.open = false;
            self.explicit = false;
        } else if is_statement_end(code) && !self.explicit {
            self.open = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(k: QueryKind) -> StepDetails {
        StepDetails {
            query_kind: Some(k),
            ..StepDetails::default()
        }
    }

    #[test]
    fn mysql_transaction() {
        let mut s = TransactionState::default();
        s.step(GTID_LOG_EVENT, StepDetails::default());
        assert!(s.open && !s.explicit);
        s.step(QUERY_EVENT, kind(QueryKind::Begin));
        assert!(s.open && s.explicit);
        assert!(s.starts(QUERY_EVENT, Some(QueryKind::Begin)));
        s.step(TABLE_MAP_EVENT, StepDetails::default());
        let end = StepDetails {
            stmt_end: true,
            ..StepDetails::default()
        };
        s.step(WRITE_ROWS_EVENT, end);
        assert!(s.open);
        s.step(XID_EVENT, StepDetails::default());
        assert!(!s.open && !s.explicit);
    }

    #[test]
    fn mariadb_standalone_and_statements() {
        let mut s = TransactionState::default();
        let standalone = StepDetails {
            standalone: true,
            ..StepDetails::default()
        };
        s.step(GTID_EVENT, standalone);
        assert!(s.open && !s.explicit);
        s.step(QUERY_EVENT, kind(QueryKind::Other));
        assert!(!s.open);
        // outside a transaction a rows event with STMT_END_F closes the statement
        s.step(TABLE_MAP_EVENT, StepDetails::default());
        s.step(
            WRITE_ROWS_EVENT_V1,
            StepDetails {
                stmt_end: true,
                ..StepDetails::default()
            },
        );
        assert!(!s.open);
        // a QUERY that failed to decode (no kind) closes outside BEGIN only
        s.step(GTID_EVENT, StepDetails::default());
        s.step(QUERY_EVENT, StepDetails::default());
        assert!(s.open && s.explicit);
        s.step(LOAD_EVENT, StepDetails::default());
        assert!(s.open);
    }
}
