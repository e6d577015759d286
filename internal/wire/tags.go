package wire

// Frontend message types: the first byte of each message a client sends
// after the startup packet (protocol 3.0, "Message Formats").
const (
	Query           byte = 'Q'
	Parse           byte = 'P'
	Bind            byte = 'B'
	Execute         byte = 'E'
	Describe        byte = 'D'
	Close           byte = 'C'
	Sync            byte = 'S'
	Flush           byte = 'H'
	FunctionCall    byte = 'F'
	CopyData        byte = 'd' // also sent by the server
	CopyDone        byte = 'c' // also sent by the server
	CopyFail        byte = 'f'
	Terminate       byte = 'X'
	PasswordMessage byte = 'p' // and every SASL and GSS response
)

// Backend message types: the first byte of each message the server
// sends.
const (
	Authentication  byte = 'R'
	BackendKeyData  byte = 'K'
	CommandComplete byte = 'C'
	CopyInResponse  byte = 'G'
	DataRow         byte = 'D'
	ErrorResponse   byte = 'E'
	ParseComplete   byte = '1'
	CloseComplete   byte = '3'
	NoData          byte = 'n'
	RowDescription  byte = 'T'
	PortalSuspended byte = 's'
	ReadyForQuery   byte = 'Z'
)

// The server's one-byte answer to an SSLRequest or a GSSENCRequest,
// before any message: go on with the encryption asked for, or without.
const (
	EncryptionAccepted byte = 'S'
	EncryptionRefused  byte = 'N'
)

// Transaction statuses: the body of ReadyForQuery.
const (
	TxIdle   byte = 'I'
	TxInTx   byte = 'T'
	TxFailed byte = 'E'
)

// ErrorResponse field types (protocol 3.0, "Error and Notice Message
// Fields").
const (
	FieldSeverity        byte = 'S' // localized
	FieldSeverityEnglish byte = 'V' // never localized (9.6 and later)
	FieldSQLState        byte = 'C'
	FieldMessage         byte = 'M'
)

// The object types of a Close (or Describe): a prepared statement or a
// portal.
const (
	CloseStatement byte = 'S'
	ClosePortal    byte = 'P'
)
