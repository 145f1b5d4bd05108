/* Opens the consumer's index through the installed C interface. */
#include <bbtree/bbtree.h>
#include <stdio.h>

int main(int argc, char** argv) {
  bbtree_index* index = NULL;
  if (argc != 2 || bbtree_open(argv[1], BBTREE_MAP, 0, &index) != BBTREE_OK) return 2;
  unsigned char key[8];
  bbtree_u64_key(12, key);
  bbtree_bytes value;
  const int ok = bbtree_get(index, key, sizeof key, &value) == BBTREE_OK &&
                 bbtree_u64_value(value.data) == 144;
  bbtree_close(index);
  printf("C: %s\n", ok ? "12 -> 144" : "wrong answer");
  return ok ? 0 : 1;
}
