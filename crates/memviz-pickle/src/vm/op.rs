//! The pickle opcodes by name (protocols 0 to 5, as CPython's `pickle.py` names them), and
//! [`name`] for messages. The VM matches these constants, never literal bytes.

/// Declares each opcode's constant and the table [`name`] reads, from one list.
macro_rules! opcodes {
    ($($(#[$doc:meta])* $name:ident = $byte:expr;)*) => {
        $($(#[$doc])* pub(crate) const $name: u8 = $byte;)*

        /// The pickle name of an opcode byte, for messages.
        pub(crate) fn name(op: u8) -> &'static str {
            match op {
                $($name => stringify!($name),)*
                _ => "unknown opcode",
            }
        }
    };
}

opcodes! {
    // Protocol 0 and 1.
    /// Push a mark: the start of a container's items.
    MARK = b'(';
    /// End of the pickle: return the top of the stack.
    STOP = b'.';
    POP = b'0';
    POP_MARK = b'1';
    DUP = b'2';
    /// A float as a text line (protocol 0).
    FLOAT = b'F';
    /// An int as a text line (protocol 0).
    INT = b'I';
    /// A signed 4-byte int.
    BININT = b'J';
    /// An unsigned 1-byte int.
    BININT1 = b'K';
    /// A long as a text line (protocol 0).
    LONG = b'L';
    /// An unsigned 2-byte int.
    BININT2 = b'M';
    NONE = b'N';
    PERSID = b'P';
    BINPERSID = b'Q';
    REDUCE = b'R';
    STRING = b'S';
    BINSTRING = b'T';
    SHORT_BINSTRING = b'U';
    UNICODE = b'V';
    /// A UTF-8 string with a 4-byte length.
    BINUNICODE = b'X';
    APPEND = b'a';
    BUILD = b'b';
    GLOBAL = b'c';
    DICT = b'd';
    EMPTY_DICT = b'}';
    APPENDS = b'e';
    GET = b'g';
    /// Memo get with a 1-byte index.
    BINGET = b'h';
    INST = b'i';
    /// Memo get with a 4-byte index.
    LONG_BINGET = b'j';
    LIST = b'l';
    EMPTY_LIST = b']';
    OBJ = b'o';
    PUT = b'p';
    /// Memo put with a 1-byte index.
    BINPUT = b'q';
    /// Memo put with a 4-byte index.
    LONG_BINPUT = b'r';
    SETITEM = b's';
    TUPLE = b't';
    EMPTY_TUPLE = b')';
    SETITEMS = b'u';
    /// A big-endian 8-byte float.
    BINFLOAT = b'G';
    // Protocol 2.
    /// The protocol version (a byte follows).
    PROTO = 0x80;
    NEWOBJ = 0x81;
    EXT1 = 0x82;
    EXT2 = 0x83;
    EXT4 = 0x84;
    TUPLE1 = 0x85;
    TUPLE2 = 0x86;
    TUPLE3 = 0x87;
    NEWTRUE = 0x88;
    NEWFALSE = 0x89;
    /// A long of up to 255 little-endian bytes (a 1-byte length).
    LONG1 = 0x8a;
    /// A long with a 4-byte length.
    LONG4 = 0x8b;
    // Protocol 3.
    BINBYTES = b'B';
    SHORT_BINBYTES = b'C';
    // Protocol 4.
    /// A UTF-8 string with a 1-byte length.
    SHORT_BINUNICODE = 0x8c;
    BINUNICODE8 = 0x8d;
    BINBYTES8 = 0x8e;
    EMPTY_SET = 0x8f;
    ADDITEMS = 0x90;
    FROZENSET = 0x91;
    NEWOBJ_EX = 0x92;
    STACK_GLOBAL = 0x93;
    /// Memo put into the next slot.
    MEMOIZE = 0x94;
    /// A length hint for the opcodes that follow.
    FRAME = 0x95;
    // Protocol 5.
    BYTEARRAY8 = 0x96;
    NEXT_BUFFER = 0x97;
    READONLY_BUFFER = 0x98;
}
