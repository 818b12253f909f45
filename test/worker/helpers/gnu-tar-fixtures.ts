/**
 * Archives made on Linux with GNU tar 1.34 (`tar --format=gnu|pax -czf … -C cfg .`, `-P` for the
 * absolute and `..` names, a real FIFO from mkfifo), so the parser is checked against a real tool
 * and not only against the test writer.
 */

/** ./, ./main.tf, ./alias.tf -> main.tf, and a 160-character path (GNU long name). */
export const GNU_TAR_GZ =
  "H4sIAAAAAAAAA+2Y0W6DIBiFvd5TmN6jgEVv9wB9CTaxI7O4IHVdlr37fm2WraZr5zLoGv/vRkFQwuGcIEkaeYcChRDDFRhfh3smMkoFY4xnUF8UUBUL/0OLom3rpI3jyDaNO9Xu3PMrJUk3TbmtVetxHUzWn7FMoP5B+NRfkk7ZF1I3Zk1KbdW9a6Bo5EaRqrHEqdZpeDTMF3myqtI7Ik1J1ma779Q3PbqMJuvP84JmqH8IkjRJb1cg30qbR0/f6AXOl8tv9WeCHawF8H/e5//K03gOmL3+f+x/A+1U+eUNtepUHWCXgfyGEPpPzv+MC5pj/ofgP+Q/Z9k4/0VRYP6HIFT+d9JqeQffIc/aPRC571LpWg39ElddeibmSaj8P+V/yo/kP+z/aIgJmLn/P3wZL3aL+PXt5tLjQcIC/pfa+I3fs/5nYnz+A0X0fwicslZCvm/Q/LMkSWWtZes1AIb/P9jQ//j/j/Hh/If7j6bZ+x9BEARBEARBEASZB+88qnneACgAAA==";

/** The same tree in pax format (long path in a pax header). */
export const PAX_TAR_GZ =
  "H4sIAAAAAAAAA+2a33KiMBjFve5TML0P5i+pF73fy32FbIktMwgdiK47O/vuG+xYkdpaLKTtcH43oCEG/DznBEM8/2m2P6xJbVXP49koUE8i5W7r6W4p43rGlKBUMca4mFFGhT882o5zOsesa2cqfyohxvqC8EW0ctnK3jK9UEL4OolY3nCaUL248o3mZWPy3Hj3as/PvizwTuL5+GM0GtdKvar/Zv9Y/4z7tyI1/qkd9F+VpXvruHPt3Yv7JsRt/1+V6Tq39dBj9Pd/ligN/w/BSf/3pbjQ//c9P/uywDuJ96IfMQf6+z9PFPw/CIf6t3LAkI2t/pC8LO5JmlX2zpX+ZWFWlizLijhbu8w37b468ljZZbYlpkjJfbF+6tQceoiR3v7PNWcc/h8C+P+0Oeh/GNGfipHe/i8opwL+H4LB69+KkcJ3sSlJz/m/YKxbf80o/D8EjMno0biH28F/CPvqP39Cbjc2n1+dThx5ceJIJM4HCFH2/v4vvWHA/0MQqv5v+r8Snfozvwv/DwGTN2H9f2OqzPzy45DfmXsg5qnLMsvtrl/slkiIgHwF/fvZ/kv/9/O/IJqcuP/v5Rhdb6+jv/8gkolxvP5jssIb8NBjnNP/ifUfJQXyPwTI2mkTjyX6Fmfzn6nu+o/0twTI/wA4W1XGz+9WCP9JcpT/Js9MPbwXXJD/+P83EHj+b9rEY4m+RaNxrXWP5z8ka+7/+fhTk8nnPwAAAAAAAAAAAAAAAAAAAAAAAAAA+N78B8fmeBgAUAAA";

/** One file named ../secret.tf. */
export const GNU_DOTDOT_TAR_GZ =
  "H4sIAAAAAAAAA+3OMQqEMBSE4Vd7ipwgvheNnmdZtBViBI9vsBILFxZEhP9rppgpxvt6Hr5pyD6PchMturbdszhnEcRioxrNLPSiZrEP4vSuQ0fLnD/JOUnTlK92v/qXWqunHwAAAAAAAAAAAAAAAAAA/rEBENnRRAAoAAA=";

/** One file named /tmp/gtar/dd/secret.tf. */
export const GNU_ABSOLUTE_TAR_GZ =
  "H4sIAAAAAAAAA+3PQQrCQAyF4ax7ijmBk0w79TxiqyupTFPw+A4uRVqQggj/t3mLvMVL9Ns9Xv1U4jDEeTyX0Q9+kV1p1XfdK6v3rJJYblWzmaWjqLW5TxJ03xmfLXN9PgQp0+Rrva37n3o0v14AAAAAAAAAAAAAAAAAAPjGEzrFNwAAKAAA";

/** ./, ./main.tf and ./pipe, a FIFO. */
export const GNU_FIFO_TAR_GZ =
  "H4sIAAAAAAAAA+3UQQqDMBCF4Vn3FDlBnKhjzuOiBRetYi30+E0tFOpCV0GK/7eZkATyYJj4QrLTJJrNNVnWeR2sUrUQQhnTfoxai7P80UQe96kdnZOx76e1e1vnf8oX17a7+emS8Y13g5u6Xul/+dv/VKwSpxkzfR28/8/T3gmwJ18M3XDO+8b2/C/+/6DWqLgmb6yPg88/AAAAAAAAAAAAAAD4fy8l1+ZUACgAAA==";
