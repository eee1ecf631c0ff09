import { validateVpnGateway } from './src';
import { gatewayFor } from './test/helpers/fixtures';
console.log(JSON.stringify(validateVpnGateway({ ...gatewayFor('private internet access'), vpnType: 'Tr0ub4dor&3x!' }), null, 1));
